#!/usr/bin/env python3
"""Generate benchmark stores by scaling the real-SDK fixtures (stdlib only).

    gen.py FIXTURES OUT seed             one conversation of 5,570 events shaped
                                         like the seed case: a long pre-tree log
                                         resumed by 1.33.0 behind a false root
    gen.py FIXTURES OUT store N [SEED]   N conversations of 50-200 events each
                                         (tree-era exchanges), about 3% damaged
    gen.py FIXTURES OUT long N [DAMAGE]  one tree-era conversation of N events;
                                         DAMAGE `gap`: the file in the middle
                                         deleted (a repair renumbers half the
                                         log); `compound`: that gap, plus an
                                         event cut off before it and one after;
                                         `dangling`: every parent_id names no
                                         event; `invalid`: no event validates
                                         (its `source` is not one the model
                                         allows); `loop`: 10,000 events from
                                         index 1 each name the next as parent,
                                         the last names the first (a loop of
                                         9,999 forward links); `dupids`: 16,000
                                         byte-for-byte copies (same id), each
                                         right after its original; `gaps`:
                                         10,000 missing indices, evenly spread
                                         (every event is there, the files after
                                         each gap move up)

Every event is a byte-for-byte copy of a fixture event written by the real SDK,
with its ids (id, parent_id, action_id, tool_call_id, leaf_event_id, the
conversation id) rewritten consistently so the copies form valid logs.
"""

import json
import os
import random
import sys
import uuid
from pathlib import Path


def load(fixtures, name):
    """(base_state text, [(file name, text)]) of a fixture conversation."""
    (conv,) = [p for p in (fixtures / name).iterdir() if p.is_dir()]
    events = sorted(
        (p.name, p.read_text())
        for p in (conv / "events").iterdir()
        if p.name.startswith("event-")
    )
    return conv.name, (conv / "base_state.json").read_text(), [t for _, t in events]


def field(text, key):
    return json.loads(text).get(key)


def dashed(hex32):
    return str(uuid.UUID(hex32))


class Writer:
    def __init__(self, rng):
        self.rng = rng

    def new_id(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def conversation(self, root, template_conv, base_state, events, replace_state, gap_at=None):
        """Write events (list of (id, text)) and base_state under a new id;
        with gap_at (an index, or a sorted list of them), no file holds the
        index before that event (it and the later ones move up one each)."""
        conv = uuid.UUID(int=self.rng.getrandbits(128), version=4).hex
        d = root / conv
        (d / "events").mkdir(parents=True)
        gaps = [] if gap_at is None else [gap_at] if isinstance(gap_at, int) else gap_at
        shift = 0
        for i, (eid, text) in enumerate(events):
            while shift < len(gaps) and gaps[shift] <= i:
                shift += 1
            with open(d / "events" / f"event-{i + shift:05d}-{eid}.json", "w") as f:
                f.write(text)
        state = base_state.replace(dashed(template_conv), dashed(conv)).replace(
            template_conv, conv
        )
        for old, new in replace_state.items():
            state = state.replace(old, new)
        with open(d / "base_state.json", "w") as f:
            f.write(state)
        return d


def remap(text, mapping):
    for old, new in mapping.items():
        text = text.replace(old, new)
    return text


def seed(fixtures, out, rng, total=5570):
    """The seed's shape: legacy (no parent_id) exchanges, then the 1.33.0
    resume tail of the false-root fixture: state updates, a user message with
    parent_id "__root__", and the agent's reply."""
    fr_conv, fr_state, fr = load(fixtures, "false-root")
    _, _, legacy = load(fixtures, "legacy-flat")
    w = Writer(rng)
    events = []
    sys_id = w.new_id()
    events.append((sys_id, fr[0].replace(field(fr[0], "id"), sys_id)))
    # One legacy exchange: user, action, observation, reply, state update.
    exchange = legacy[1:5] + [fr[2]]
    tail = fr[5:]  # 6 events: 2 legacy updates, 1 parented, root, update, reply
    k = 0
    while len(events) + len(exchange) + len(tail) <= total:
        ids = {field(t, "id"): w.new_id() for t in exchange}
        ids["call_ls_1"] = f"call_ls_{k}"
        events += [(ids[field(t, "id")], remap(t, ids)) for t in exchange]
        k += 1
    while len(events) + len(tail) < total:  # pad with state updates
        eid = w.new_id()
        events.append((eid, fr[2].replace(field(fr[2], "id"), eid)))
    ids = {field(t, "id"): w.new_id() for t in tail}
    events += [(ids[field(t, "id")], remap(t, ids)) for t in tail]
    leaf = field(fr[10], "id")
    user = field(fr[8], "id")
    d = w.conversation(
        out, fr_conv, fr_state, events, {leaf: ids[leaf], user: ids[user]}
    )
    return d, len(events)


DAMAGE_RATE = float(os.environ.get("DAMAGE_RATE", "0.03"))
DAMAGE = ["truncated", "empty", "false-root", "unknown-kind", "gap", "dangling"]


def store(fixtures, out, n, rng):
    """N tree-era conversations of 50-200 events; ~3% with one kind of damage."""
    ct_conv, ct_state, ct = load(fixtures, "clean-tree")
    sys_t, exchange = ct[0], ct[1:5]
    sys_old = field(sys_t, "id")
    leaf_old = field(ct[4], "id")
    user_old = field(ct[1], "id")
    w = Writer(rng)
    counts = {"conversations": 0, "events": 0, "damaged": {}}
    for _ in range(n):
        target = rng.randint(50, 200)
        sys_id = w.new_id()
        events = [(sys_id, sys_t.replace(sys_old, sys_id))]
        prev, last_user, k = sys_id, None, 0
        while len(events) + len(exchange) <= target:
            ids = {field(t, "id"): w.new_id() for t in exchange}
            ids[sys_old] = prev  # the exchange's first event hangs off the last
            ids["call_ls_1"] = f"call_ls_{k}"
            events += [(ids[field(t, "id")], remap(t, ids)) for t in exchange]
            prev, last_user = ids[leaf_old], ids[user_old]
            k += 1
        damage = rng.choice(DAMAGE) if rng.random() < DAMAGE_RATE else None
        gap_at = None
        if damage:
            i = rng.randrange(5, len(events) - 1)
            eid, text = events[i]
            if damage == "truncated":
                events[i] = (eid, text[: len(text) // 2])
            elif damage == "empty":
                events[i] = (eid, "")
            elif damage == "false-root":
                parent = field(text, "parent_id")
                events[i] = (eid, text.replace(parent, "__root__", 1))
            elif damage == "unknown-kind":
                events[i] = (eid, text.replace('"kind":"', '"kind":"Canvas', 1))
            elif damage == "gap":
                gap_at = i
            elif damage == "dangling":
                parent = field(text, "parent_id")
                events[i] = (eid, text.replace(parent, w.new_id(), 1))
            counts["damaged"][damage] = counts["damaged"].get(damage, 0) + 1
        w.conversation(
            out,
            ct_conv,
            ct_state,
            events,
            {leaf_old: prev, user_old: last_user},
            gap_at,
        )
        counts["conversations"] += 1
        counts["events"] += len(events)
    return counts


# the sizes of the `loop`, `dupids` and `gaps` damages (smaller for a quick
# look at small logs)
LOOP = int(os.environ.get("LOOP", 10000))
DUPIDS = int(os.environ.get("DUPIDS", 16000))
GAPS = int(os.environ.get("GAPS", 10000))


def long(fixtures, out, n, damage, rng):
    """One tree-era conversation of n events: clean-tree exchanges chained."""
    ct_conv, ct_state, ct = load(fixtures, "clean-tree")
    sys_t, exchange = ct[0], ct[1:5]
    sys_old = field(sys_t, "id")
    leaf_old = field(ct[4], "id")
    user_old = field(ct[1], "id")
    w = Writer(rng)
    sys_id = w.new_id()
    events = [(sys_id, sys_t.replace(sys_old, sys_id))]
    prev, last_user, k = sys_id, None, 0
    # `dupids` adds its copies after the chain is made
    target = n - DUPIDS if damage == "dupids" else n
    if target < 2:
        sys.exit(f"`{damage}` needs more than {n - target + 1} events")
    while len(events) + len(exchange) <= target:
        ids = {field(t, "id"): w.new_id() for t in exchange}
        ids[sys_old] = prev
        ids["call_ls_1"] = f"call_ls_{k}"
        events += [(ids[field(t, "id")], remap(t, ids)) for t in exchange]
        prev, last_user = ids[leaf_old], ids[user_old]
        k += 1

    def set_parent(i, parent):
        eid, text = events[i]
        old = field(text, "parent_id")
        events[i] = (eid, text.replace(f'"parent_id":"{old}"', f'"parent_id":"{parent}"', 1))

    gap_at = None
    if damage in ("gap", "compound"):
        gap_at = len(events) // 2
    if damage == "compound":
        for i in (len(events) // 4, 3 * len(events) // 4):
            eid, text = events[i]
            events[i] = (eid, text[: len(text) // 2])
    elif damage == "dangling":
        for i in range(1, len(events)):
            set_parent(i, w.new_id())
    elif damage == "invalid":
        events = [(eid, text.replace('"source":"', '"source":"not-', 1)) for eid, text in events]
    elif damage == "loop":
        end = min(1 + LOOP, len(events))
        for i in range(1, end - 1):
            set_parent(i, events[i + 1][0])
        set_parent(end - 1, events[1][0])
    elif damage == "dupids":
        base, copies = events, len(events) and n - len(events)
        m = len(base) - 1  # event 0 (the system prompt) is not copied
        events = [base[0]]
        for j in range(1, len(base)):
            events.append(base[j])
            events += [base[j]] * ((j * copies) // m - ((j - 1) * copies) // m)
    elif damage == "gaps":
        step = len(events) / (GAPS + 1)
        gap_at = sorted({max(1, int(step * (g + 1))) for g in range(GAPS)})
    d = w.conversation(
        out, ct_conv, ct_state, events, {leaf_old: prev, user_old: last_user}, gap_at
    )
    return d, len(events)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    fixtures, out, what = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    out.mkdir(parents=True, exist_ok=True)
    if what == "seed":
        d, n = seed(fixtures, out, random.Random(5570))
        print(json.dumps({"conversation": str(d), "events": n}))
    elif what == "long":
        n = int(sys.argv[4])
        damage = sys.argv[5] if len(sys.argv) > 5 else None
        d, k = long(fixtures, out, n, damage, random.Random(n))
        print(json.dumps({"conversation": str(d), "events": k, "damage": damage}))
    elif what == "store":
        n = int(sys.argv[4])
        rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
        print(json.dumps(store(fixtures, out, n, rng)))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
