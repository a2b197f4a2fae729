def case(parent):
    n = len(parent)  # parent[0] belongs to house 1 and is ignored
    return f"{n}\n" + " ".join(map(str, parent[1:])) + "\n"


def tree(rng, n, reach):
    """Random tree: house labels are shuffled, each new node hangs below one of the last `reach` nodes."""
    order = [1] + rng.sample(range(2, n + 1), n - 1)
    parent = [0] * (n + 1)
    for i in range(1, n):
        parent[order[i]] = order[rng.randint(max(0, i - reach), i - 1)]
    return parent[1:]


def path_from_middle(rng, n):
    order = list(range(1, n + 1))
    rng.shuffle(order)
    parent = [0] * (n + 1)
    pos = order.index(1)
    for i in range(n):
        if i < pos:
            parent[order[i]] = order[i + 1]
        elif i > pos:
            parent[order[i]] = order[i - 1]
    return parent[1:]


def generate(rng):
    public = [case([0, 1, 2, 1, 4, 5, 5, 3])]
    private = [
        case([0, 1]),
        case([0, 1, 1, 1, 1, 1]),
        case([0, 3, 4, 5, 1]),
        case(tree(rng, 30, 30)),
        case(tree(rng, 500, 3)),
        case(path_from_middle(rng, 20000)),
        case(tree(rng, 20000, 20000)),
        case(tree(rng, 20000, 5)),
        case([0] + [1] * 19999),
    ]
    generated = [case(tree(rng, rng.randint(2, 300), rng.randint(1, 10))) for _ in range(4)]
    return {"public": public, "private": private, "generated": generated}
