"""Interning short int32 sequences: SequenceIndex (declared in _sequence_index.pxd).

The binarizer (_rule_binarizer.pyx) interns L(v) (as token-key ids), virtual
node keys and name keys here.
"""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp.vector cimport vector
cimport cython

cdef extern from "prefetch.hh":
    void cky_prefetch(const void* address) noexcept nogil


# A table slot holds the high 32 bits of its sequence's hash above the sequence's id, so that
# probing rarely has to look at a sequence that is not the one sought.
cdef uint64_t ID_MASK = 0xFFFFFFFFULL
cdef uint64_t TAG_MASK = 0xFFFFFFFF00000000ULL
cdef uint64_t EMPTY_SLOT = 0xFFFFFFFFFFFFFFFFULL


@cython.final
cdef class SequenceIndex:
    """Distinct int32 sequences -> dense ids 0, 1, 2, ... in order of first sight.

    The binarizer interns L(v) (as token-key ids) and virtual-node keys here
    instead of in dicts of tuples: the sequences sit in one flat array, so a
    lookup hashes a few contiguous ints and compares them in place, where a
    dict of tuples would build a tuple and touch every item object it holds.
    """

    def __cinit__(self):
        self.slots.assign(1024, EMPTY_SLOT)
        self.starts.push_back(0)

    def __len__(self):
        return self.hashes.size()

    cdef int find_or_add(self, const int32_t* values, int n, bint* added) except -1:
        """The id of values[0:n], adding it if it is new (added says which)."""
        return self.find_or_add_hashed(values, n, sequence_hash(values, n), added)

    cdef uint64_t prefetch(self, const int32_t* values, int n) noexcept:
        """The hash of values[0:n], with its table slot requested from memory: a caller with
        several look-ups to make asks for all their slots first, so that the cache misses overlap."""
        cdef uint64_t h = sequence_hash(values, n)
        cky_prefetch(&self.slots[h & (self.slots.size() - 1)])
        return h

    cdef int find_or_add_hashed(self, const int32_t* values, int n, uint64_t h, bint* added) except -1:
        """find_or_add with the hash already computed (by prefetch)."""
        cdef uint64_t tag = h & TAG_MASK, entry
        cdef size_t mask = self.slots.size() - 1, slot = h & mask
        cdef int32_t found
        cdef int64_t start
        cdef int i
        while True:
            entry = self.slots[slot]
            if entry == EMPTY_SLOT:
                break
            if (entry & TAG_MASK) == tag:
                found = <int32_t>(entry & ID_MASK)
                start = self.starts[found]
                if self.starts[found + 1] - start == n:
                    i = 0
                    while i < n and self.values[start + i] == values[i]:
                        i += 1
                    if i == n:
                        added[0] = False
                        return found
            slot = (slot + 1) & mask
        found = <int32_t>self.hashes.size()
        for i in range(n):
            self.values.push_back(values[i])
        self.starts.push_back(<int64_t>self.values.size())
        self.hashes.push_back(h)
        self.slots[slot] = tag | <uint64_t>found
        if 2 * self.hashes.size() > self.slots.size():
            self.grow()
        added[0] = True
        return found

    cdef void grow(self) except *:
        """Double the table (load stays at most one half) and re-place every id."""
        cdef size_t size = 2 * self.slots.size(), mask = size - 1, slot, i
        self.slots.assign(size, EMPTY_SLOT)
        for i in range(self.hashes.size()):
            slot = self.hashes[i] & mask
            while self.slots[slot] != EMPTY_SLOT:
                slot = (slot + 1) & mask
            self.slots[slot] = (self.hashes[i] & TAG_MASK) | <uint64_t>i

    cdef int length(self, int sequence) noexcept:
        return <int>(self.starts[sequence + 1] - self.starts[sequence])

    cdef const int32_t* items(self, int sequence) noexcept:
        return &self.values[self.starts[sequence]]

    def sequence(self, int sequence):
        """The values of one id (for tests)."""
        return [self.values[i] for i in range(self.starts[sequence], self.starts[sequence + 1])]

    def add(self, values):
        """find_or_add from Python (for tests): (id, added)."""
        cdef vector[int32_t] buffer = values
        cdef bint added
        cdef int found = self.find_or_add(buffer.data(), <int>buffer.size(), &added)
        return found, bool(added)
