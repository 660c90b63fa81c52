"""FiBA's bulk insert (paper 004, section 5): a sorted batch in O(m log(d/m)).

The batch becomes *twigs*: new entries, each with the child to its right (NIL at the
leaves), grouped by the node they go into. A level's groups are applied bottom-up, one
level per round; a node that overflows splits into pieces whose separators are the next
level's twigs, and a node whose aggregate changed sends a recompute event (a group
without twigs) to its parent. Each level's twigs live in one scratch record
``(times, partials, children, groups)``; two of them alternate between the levels, and
``groups`` holds four ints per group: node, level, first twig, twig count.
"""

from __future__ import annotations

from .layout import (
    CHILD, INTS, IS_LEAF, KEYS, LEVELS, N_ENTRIES, NIL, ON_LEFT_SPINE, ON_RIGHT_SPINE, PARENT, PARTS,
    RIGHT_FINGER, ROOT, UP, TreeBuild)


def make_twigs(build: TreeBuild, made):
    """The pieces of a bulk insert's level: groups and twigs, a twig group merged into a node
    that keeps room, and a node filled from the merge of an overfilled one."""
    RECORD, SLOTS, apart, at, flat = build.record, build.slots, build.apart, build.at, build.flat
    load, scalar, store = build.load, build.scalar, build.store
    copy_entry, set_child = made.copy_entry, made.set_child

    def add_group(groups, n_groups, node, level, first_twig):
        """Open a group for ``node`` unless the last group already targets it (one group per node)."""
        if n_groups > 0 and groups[4 * (n_groups - 1)] == node:
            return n_groups
        groups[4 * n_groups] = node
        groups[4 * n_groups + 1] = level
        groups[4 * n_groups + 2] = first_twig
        groups[4 * n_groups + 3] = 0
        return n_groups + 1

    add_group = flat(add_group)

    def add_twig(twigs, n_groups, n_twigs, t, v, child):
        """Append the twig (t, v, child) to the last group."""
        twig_times, twig_parts, twig_children, groups = twigs
        twig_times[n_twigs] = t
        store(twig_parts, n_twigs, v)
        twig_children[n_twigs] = child
        groups[4 * (n_groups - 1) + 3] += 1
        return n_twigs + 1

    add_twig = flat(add_twig)

    def small_insert(bufs, x, twigs, first, count):
        """Interleave ``count`` twigs into x from the back (x does not overflow)."""
        twig_times, twig_parts, twig_children, _ = twigs
        keys, parts, ints = bufs[KEYS], bufs[PARTS], bufs[INTS]
        internal = ints[at(x * RECORD + IS_LEAF)] == 0
        i = ints[at(x * RECORD + N_ENTRIES)] - 1
        j = count - 1
        w = ints[at(x * RECORD + N_ENTRIES)] + count - 1
        while j >= 0:
            if i >= 0 and keys[at(x * SLOTS + i)] > twig_times[first + j]:
                copy_entry(bufs, x * SLOTS + w, x * SLOTS + i)
                if internal:
                    ints[at(x * RECORD + CHILD + w + 1)] = ints[at(x * RECORD + CHILD + i + 1)]
                i -= 1
            else:
                keys[at(x * SLOTS + w)] = twig_times[first + j]
                store(parts, at(x * SLOTS + w), load(twig_parts, first + j))
                if internal:
                    set_child(bufs, x, w + 1, twig_children[first + j])
                j -= 1
            w -= 1
        ints[at(x * RECORD + N_ENTRIES)] += count

    small_insert = apart(small_insert)

    def fill(bufs, y, merged, start, count):
        """Node y takes ``count`` merged entries from ``start`` (and the children around them)."""
        merged_times, merged_parts, merged_children = merged
        ints = bufs[INTS]
        for q in range(count):
            scalar(q)
            bufs[KEYS][at(y * SLOTS + q)] = merged_times[start + q]
            store(bufs[PARTS], at(y * SLOTS + q), load(merged_parts, start + q))
        if ints[at(y * RECORD + IS_LEAF)] == 0:
            for q in range(count + 1):
                scalar(q)
                set_child(bufs, y, q, merged_children[start + q])
        ints[at(y * RECORD + N_ENTRIES)] = count

    fill = flat(fill)

    return dict(add_group=add_group, add_twig=add_twig, small_insert=small_insert, fill=fill)


def make_bulk_insert(build: TreeBuild, made):
    """``bulk_insert_native`` (multi-search, pass up level by level, repair the touched spines)
    and ``bulk_insert_loop`` (single inserts, nb_fiba)."""
    AGG, FINGER, MAX_ENTRIES, RECORD = build.agg, build.finger, build.max_entries, build.record
    SLOTS, alloc, alloc_ints, alloc_times = build.slots, build.alloc, build.alloc_ints, build.alloc_times
    apart, at, combine, load, mu = build.apart, build.at, build.combine, build.load, build.mu
    nrt, scalar, store = build.nrt, build.scalar, build.store
    add_group, add_twig, alloc_node, fill = made.add_group, made.add_twig, made.alloc_node, made.fill
    insert_at, kind, level_of, new_root_above = made.insert_at, made.kind, made.level_of, made.new_root_above
    recompute, recompute_if_up, small_insert = made.recompute, made.recompute_if_up, made.small_insert
    state_of, walk_down, youngest = made.state_of, made.walk_down, made.youngest

    def bulk_split(bufs, x, twigs, first, count, level, next_twigs, n_next_groups, n_next_twigs, merged):
        """Claim 1: pieces of mu entries while the rest is over-full; the entries between go up.

        x's entries and its ``count`` twigs are merged into ``merged``; x keeps the first mu,
        each new right sibling the next piece, and each separator becomes a twig of x's
        parent in ``next_twigs``. Returns the last piece and the next level's group and twig
        counts.
        """
        twig_times, twig_parts, twig_children, _ = twigs
        merged_times, merged_parts, merged_children = merged
        keys, ints = bufs[KEYS], bufs[INTS]
        internal = ints[at(x * RECORD + IS_LEAF)] == 0
        n = ints[at(x * RECORD + N_ENTRIES)]
        total = n + count
        if internal:
            merged_children[0] = ints[at(x * RECORD + CHILD)]
        i = 0
        j = 0
        for w in range(total):
            scalar(w)
            if j >= count or (i < n and keys[at(x * SLOTS + i)] < twig_times[first + j]):
                merged_times[w] = keys[at(x * SLOTS + i)]
                store(merged_parts, w, load(bufs[PARTS], at(x * SLOTS + i)))
                if internal:
                    merged_children[w + 1] = ints[at(x * RECORD + CHILD + i + 1)]
                i += 1
            else:
                merged_times[w] = twig_times[first + j]
                store(merged_parts, w, load(twig_parts, first + j))
                if internal:
                    merged_children[w + 1] = twig_children[first + j]
                j += 1
        if x == ints[ROOT]:
            new_root_above(bufs, x)
        parent = ints[at(x * RECORD + PARENT)]
        was_right = ints[at(x * RECORD + ON_RIGHT_SPINE)]
        ints[at(x * RECORD + ON_RIGHT_SPINE)] = 0
        fill(bufs, x, merged, 0, mu)
        pos = mu
        while True:
            y = alloc_node(bufs, ints[at(x * RECORD + IS_LEAF)])
            n_next_groups = add_group(next_twigs[3], n_next_groups, parent, level + 1, n_next_twigs)
            n_next_twigs = add_twig(next_twigs, n_next_groups, n_next_twigs, merged_times[pos],
                                    load(merged_parts, pos), y)
            rest = total - pos - 1
            if rest > MAX_ENTRIES:
                fill(bufs, y, merged, pos + 1, mu)
                recompute_if_up(bufs, y)
                pos += mu + 1
            else:
                fill(bufs, y, merged, pos + 1, rest)
                break
        ints[at(y * RECORD + ON_RIGHT_SPINE)] = was_right
        if was_right != 0 and ints[at(y * RECORD + IS_LEAF)] != 0:
            ints[RIGHT_FINGER] = y
        recompute_if_up(bufs, x)
        recompute_if_up(bufs, y)
        return y, n_next_groups, n_next_twigs

    bulk_split = apart(bulk_split)

    def bulk_insert_loop(bufs, st, batch_times, batch_parts, m):
        for q in range(m):
            st = insert_at(bufs, st, batch_times[q], load(batch_parts, q))
        return st

    bulk_insert_loop = apart(bulk_insert_loop)

    def bulk_insert_native(bufs, st, batch_times, batch_parts, m):
        if m == 0:
            return st
        if m == 1:  # no scratch to allocate for a single entry
            return insert_at(bufs, st, batch_times[0], load(batch_parts, 0))
        if FINGER and (st[2] == 0 or youngest(bufs) <= batch_times[0]):
            # no older than every entry: appends at the right finger (the first may combine
            # into the youngest entry), O(1) amortized each, are the bulk insert at d = 0
            # without its scratch and merge passes
            return bulk_insert_loop(bufs, st, batch_times, batch_parts, m)
        room = m + 2
        twigs = (alloc_times(room), alloc(room), alloc_ints(room), alloc_ints(8 * room))
        next_twigs = (alloc_times(room), alloc(room), alloc_ints(room), alloc_ints(8 * room))
        merged = (alloc_times(AGG + room), alloc(AGG + room), alloc_ints(AGG + room + 1))
        return bulk_insert_work(bufs, st, batch_times, batch_parts, m, twigs, next_twigs, merged,
                                alloc_ints(4 * LEVELS), alloc_times(2 * LEVELS))

    def multi_search(bufs, batch_times, batch_parts, m, twigs, path_ints, path_times):
        """Step 1: one search per batch entry, each resumed from the path of the one before.

        The search starts at the right finger (the root for classic) and climbs only as far
        as needed; ``path_*`` keep, per depth, the node and the open time range its subtree
        spans. A new time becomes a leaf twig, an existing one combines in place and sends a
        recompute event. Returns the number of groups (in time order, one per node).
        """
        keys, parts, ints = bufs[KEYS], bufs[PARTS], bufs[INTS]
        twig_parts, groups = twigs[1], twigs[3]
        path_node, path_level = path_ints[:LEVELS], path_ints[LEVELS:2 * LEVELS]
        path_has_lower, path_has_upper = path_ints[2 * LEVELS:3 * LEVELS], path_ints[3 * LEVELS:]
        path_lower, path_upper = path_times[:LEVELS], path_times[LEVELS:]
        root = ints[ROOT]
        first_time = batch_times[0]
        x = root
        level = level_of(bufs, root)
        if FINGER:
            x = ints[RIGHT_FINGER]
            level = 0
            while x != root and first_time < keys[at(x * SLOTS)]:
                x = ints[at(x * RECORD + PARENT)]
                level += 1
        depth = 0
        path_node[0] = x
        path_level[0] = level
        path_has_lower[0] = 1 if (x != root and ints[at(x * RECORD + N_ENTRIES)] > 0) else 0
        path_lower[0] = keys[at(x * SLOTS)] if path_has_lower[0] != 0 else first_time
        path_has_upper[0] = 0
        path_upper[0] = first_time
        n_groups = 0
        n_twigs = 0
        prev_new = False
        for q in range(m):
            t = batch_times[q]
            v = load(batch_parts, q)
            if prev_new and t == batch_times[q - 1]:  # equal times in a batch combine in batch order
                store(twig_parts, n_twigs - 1, combine(load(twig_parts, n_twigs - 1), v))
                continue
            while depth > 0 and not ((path_has_lower[depth] == 0 or path_lower[depth] < t)
                                     and (path_has_upper[depth] == 0 or t < path_upper[depth])):
                depth -= 1
            x = path_node[depth]
            level = path_level[depth]
            while True:
                n = ints[at(x * RECORD + N_ENTRIES)]
                i = 0
                while i < n and keys[at(x * SLOTS + i)] < t:
                    i += 1
                found = i < n and keys[at(x * SLOTS + i)] == t
                if found or ints[at(x * RECORD + IS_LEAF)] != 0:
                    break
                depth += 1
                if i > 0:
                    path_has_lower[depth] = 1
                    path_lower[depth] = keys[at(x * SLOTS + i - 1)]
                else:
                    path_has_lower[depth] = path_has_lower[depth - 1]
                    path_lower[depth] = path_lower[depth - 1]
                if i < n:
                    path_has_upper[depth] = 1
                    path_upper[depth] = keys[at(x * SLOTS + i)]
                else:
                    path_has_upper[depth] = path_has_upper[depth - 1]
                    path_upper[depth] = path_upper[depth - 1]
                x = ints[at(x * RECORD + CHILD + i)]
                level -= 1
                path_node[depth] = x
                path_level[depth] = level
            if found:
                store(parts, at(x * SLOTS + i), combine(load(parts, at(x * SLOTS + i)), v))
                n_groups = add_group(groups, n_groups, x, level, n_twigs)  # a recompute event riding up
                prev_new = False
            else:
                n_groups = add_group(groups, n_groups, x, 0, n_twigs)
                n_twigs = add_twig(twigs, n_groups, n_twigs, t, v, NIL)
                prev_new = True
        return n_groups

    multi_search = apart(multi_search)

    def bulk_insert_work(bufs, st, batch_times, batch_parts, m, twigs, next_twigs, merged, path_ints,
                         path_times):
        ints = bufs[INTS]
        n_groups = multi_search(bufs, batch_times, batch_parts, m, twigs, path_ints, path_times)
        # Step 2: pass up, one level per round; events stay in time order, one group per node.
        top_left = NIL
        top_right = NIL
        root_touched = False
        level = 0
        while n_groups > 0:
            groups, next_groups = twigs[3], next_twigs[3]
            n_next_groups = 0
            n_next_twigs = 0
            for g in range(n_groups):
                x = groups[4 * g]
                group_level = groups[4 * g + 1]
                first = groups[4 * g + 2]
                count = groups[4 * g + 3]
                if group_level > level:  # a recompute event still riding up
                    n_next_groups = add_group(next_groups, n_next_groups, x, group_level, n_next_twigs)
                    continue
                last = x
                if count > 0 and ints[at(x * RECORD + N_ENTRIES)] + count > MAX_ENTRIES:
                    last, n_next_groups, n_next_twigs = bulk_split(bufs, x, twigs, first, count, level,
                                                                   next_twigs, n_next_groups, n_next_twigs,
                                                                   merged)
                else:
                    if count > 0:
                        small_insert(bufs, x, twigs, first, count)
                    if kind(bufs, x) == UP:
                        recompute(bufs, x)
                        if ints[at(x * RECORD + PARENT)] != NIL:
                            n_next_groups = add_group(next_groups, n_next_groups, ints[at(x * RECORD + PARENT)],
                                                      level + 1, n_next_twigs)
                for z in (x, last):
                    if z == ints[ROOT]:
                        root_touched = True
                    else:
                        if ints[at(z * RECORD + ON_LEFT_SPINE)] != 0:
                            top_left = z
                        if ints[at(z * RECORD + ON_RIGHT_SPINE)] != 0:
                            top_right = z
            n_groups = n_next_groups
            twigs, next_twigs = next_twigs, twigs
            level += 1
        # Step 3: pass down the touched spines.
        if FINGER:
            if root_touched:
                recompute(bufs, ints[ROOT])
            if top_left != NIL:
                recompute(bufs, top_left)
                walk_down(bufs, top_left, False)
            if top_right != NIL:
                recompute(bufs, top_right)
                walk_down(bufs, top_right, True)
        return state_of(bufs)

    bulk_insert_work = apart(bulk_insert_work)
    bulk_insert_native = nrt(bulk_insert_native)

    return dict(bulk_insert_native=bulk_insert_native, bulk_insert_loop=bulk_insert_loop)
