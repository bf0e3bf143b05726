"""Go's ``sort.SliceStable``, step for step.

strategicpatch sorts list items with a comparator that is not a strict weak
order (an item missing from the order list is "less" than anything), so the
result depends on the exact sequence of comparisons and swaps. Python's sort
would give different answers; this is Go's sort/zsortfunc.go stable sort:
insertion sort in blocks of 20, then SymMerge with rotations.
"""
from __future__ import annotations


def slice_stable(data: list, less) -> list:
    """Sort ``data`` in place with Go's algorithm and return it; ``less(a, b)`` compares elements."""
    n = len(data)

    def swap(i, j):
        data[i], data[j] = data[j], data[i]

    def insertion(a, b):
        for i in range(a + 1, b):
            j = i
            while j > a and less(data[j], data[j - 1]):
                swap(j, j - 1)
                j -= 1

    def swap_range(a, b, count):
        for i in range(count):
            swap(a + i, b + i)

    def rotate(a, m, b):
        i, j = m - a, b - m
        while i != j:
            if i > j:
                swap_range(m - i, m, j)
                i -= j
            else:
                swap_range(m - i, m + j - i, i)
                j -= i
        swap_range(m - i, m, i)

    def sym_merge(a, m, b):
        if m - a == 1:
            i, j = m, b
            while i < j:
                h = (i + j) >> 1
                if less(data[h], data[a]):
                    i = h + 1
                else:
                    j = h
            for k in range(a, i - 1):
                swap(k, k + 1)
            return
        if b - m == 1:
            i, j = a, m
            while i < j:
                h = (i + j) >> 1
                if not less(data[m], data[h]):
                    i = h + 1
                else:
                    j = h
            for k in range(m, i, -1):
                swap(k, k - 1)
            return
        mid = (a + b) >> 1
        total = mid + m
        if m > mid:
            start, r = total - b, mid
        else:
            start, r = a, m
        p = total - 1
        while start < r:
            c = (start + r) >> 1
            if not less(data[p - c], data[c]):
                start = c + 1
            else:
                r = c
        end = total - start
        if start < m < end:
            rotate(start, m, end)
        if a < start < mid:
            sym_merge(a, start, mid)
        if mid < end < b:
            sym_merge(mid, end, b)

    block = 20
    a, b = 0, block
    while b <= n:
        insertion(a, b)
        a, b = b, b + block
    insertion(a, n)
    while block < n:
        a, b = 0, 2 * block
        while b <= n:
            sym_merge(a, a + block, b)
            a, b = b, b + 2 * block
        if a + block < n:
            sym_merge(a, a + block, n)
        block *= 2
    return data
