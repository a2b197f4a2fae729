def walk_of(parent):
    n = len(parent)
    children = [[] for _ in range(n)]
    for v in range(1, n):
        children[parent[v]].append(v)
    out = []
    stack = [(0, 0)]
    while stack:
        v, i = stack.pop()
        if i < len(children[v]):
            stack.append((v, i + 1))
            out.append("D")
            stack.append((children[v][i], 0))
        elif v != 0:
            out.append("U")
    return "".join(out)


def case(parent):
    return f"{len(parent)}\n{walk_of(parent)}\n"


def random_tree(rng, n, spread):
    # spread small: long chains; spread large: bushy
    return [-1] + [rng.randint(max(0, v - spread), v - 1) for v in range(1, n)]


def generate(rng):
    public = [case([-1, 0, 0, 0, 3, 3])]
    private = [
        case([-1, 0]),
        case([-1, 0, 0]),
        case([-1, 0, 1, 1, 0, 4]),
        case([-1, 0, 1, 2]),
        case([-1, 0, 0, 0, 0, 0]),
        case([-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
    ]
    for _ in range(4):
        private.append(case(random_tree(rng, rng.randint(2, 40), rng.choice([1, 3, 100]))))
    private.append(case(random_tree(rng, 90000, 90000)))
    private.append(case(list(range(-1, 30000 - 1))))  # a path
    generated = [
        case(random_tree(rng, 30000, 5)),
        case([-1] + [0] * 999 + [v - 1 for v in range(1000, 3000)]),
    ]
    for _ in range(3):
        generated.append(case(random_tree(rng, rng.randint(50, 300), rng.choice([2, 10, 1000]))))
    return {"public": public, "private": private, "generated": generated}
