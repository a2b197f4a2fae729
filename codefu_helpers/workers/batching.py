"""How a step's samples are split over workers and micro-batches: by token count, the same way on every worker.

Two rules keep data-parallel training exact and deadlock-free:

- **Balance**: each mini-batch's samples are dealt to the workers so that every worker gets the same number of
  samples (give or take one) and about the same number of tokens (`balance_by_tokens`, longest first, each to the
  least-loaded worker with room).
- **Equal counts**: FSDP2 gathers each layer's weights in every forward and backward, which is a collective, so
  every worker must run the same number of forward passes. `micro_batches` splits one worker's share either into
  fixed-size micro-batches (`algorithm.ppo_micro_batch_size`) or by a token budget
  (`algorithm.ppo_max_token_len_per_gpu`, verl's dynamic batch size), and `equal_counts` pads the shorter lists
  with empty micro-batches (a worker runs an all-masked pass for each, contributing nothing to the gradient).

A sample's cost is its padded length in the packed batch: prompt + response tokens. A micro-batch of k samples
costs k x its longest sample, because `policy_ops.pack` pads every row to the same width.
"""

from __future__ import annotations


def sample_tokens(prompt_len: int, response_len: int) -> int:
    return prompt_len + max(1, response_len)


def balance_by_tokens(items: list[int], tokens: list[int], world_size: int) -> list[list[int]]:
    """Deal `items` (indices) to `world_size` workers: counts differ by at most one, token sums nearly equal.

    Longest first, each to the least-loaded worker that still has room (the capacity is ceil(len / world_size)).
    Returns one list of items per worker, each in the order the items were given."""
    if world_size == 1:
        return [list(items)]
    capacity = -(-len(items) // world_size)
    loads, shares = [0] * world_size, [[] for _ in range(world_size)]
    position = {item: i for i, item in enumerate(items)}
    for item, cost in sorted(zip(items, tokens), key=lambda pair: (-pair[1], position[pair[0]])):
        rank = min((r for r in range(world_size) if len(shares[r]) < capacity), key=lambda r: (loads[r], r))
        shares[rank].append(item)
        loads[rank] += cost
    return [sorted(share, key=position.__getitem__) for share in shares]


def micro_batches(items: list[int], tokens: list[int], micro_batch_size: int,
                  max_tokens: int | None = None) -> list[list[int]]:
    """One worker's share of a mini-batch split into micro-batches (gradient-accumulation passes).

    max_tokens None: consecutive runs of `micro_batch_size` items. Otherwise micro-batches whose padded size
    (count x longest sample) stays within `max_tokens`: items longest first, each added to the current
    micro-batch while it fits; a sample longer than the budget on its own gets a micro-batch of its own."""
    if max_tokens is None:
        return [items[i:i + micro_batch_size] for i in range(0, len(items), micro_batch_size)]
    out: list[list[int]] = []
    current, longest = [], 0
    for item, cost in sorted(zip(items, tokens), key=lambda pair: -pair[1]):
        if current and (len(current) + 1) * max(longest, cost) > max_tokens:
            out.append(current)
            current, longest = [], 0
        current.append(item)
        longest = max(longest, cost)
    if current:
        out.append(current)
    return out


def equal_counts(per_rank: list[list[list[int]]]) -> list[list[list[int]]]:
    """Pads every worker's list of micro-batches with empty ones up to the longest list (see the module docstring)."""
    most = max((len(m) for m in per_rank), default=0)
    return [m + [[] for _ in range(most - len(m))] for m in per_rank]
