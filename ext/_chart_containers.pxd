"""Cython declarations of the C++ helpers of the compiled searches (no module: cimported by _chart,
_chart_grammar and, through _chart, the searches built on ChartSearch): chart_containers.hh's sort of
a cell's items, hash map, cube-pruning heap and hash mixing, search_errors.hh's guard of a nogil step
against C++ exceptions, and prefetch.hh."""
from libc.stdint cimport int32_t, uint64_t
from libcpp.vector cimport vector

cdef extern from "chart_containers.hh":
    const int32_t CKY_GLUE_CONCAT_TARGET[2]
    const uint64_t CKY_GLUE_CONCAT_HASH
    const uint64_t CKY_GLUE_START_HASH
    cdef struct CkySortEntry:
        double score
        int32_t symbol
        int32_t id
    void cky_sort_entries(CkySortEntry *first, size_t n) nogil
    cdef cppclass CkyItemSorter:  # cky_sort_entries' order, for a cell's items (nearly in order already)
        CkyItemSorter() nogil
        void sort(CkySortEntry *first, size_t n) nogil
    cdef struct CkyHeapEntry:
        double score
        int32_t index
    void cky_heap_push(vector[CkyHeapEntry] &heap, double score, int32_t index) nogil
    int32_t cky_heap_pop(vector[CkyHeapEntry] &heap) nogil
    cdef cppclass CkyHashMap:
        CkyHashMap() nogil
        void clear() nogil
        void clear_fitted() nogil  # clear, the table sized for as many keys as it held
        size_t size() nogil
        int32_t *find(uint64_t key) nogil
        bint set(uint64_t key, int32_t value) nogil
        size_t bytes() nogil  # the table's memory
    uint64_t cky_mix(uint64_t h, uint64_t x) nogil
    T *cky_append[T](vector[T] &v) nogil
    size_t cky_home_slot(uint64_t key) nogil
    int cky_popcount64(uint64_t x) nogil

# A search's nogil part run so that a C++ exception (std::bad_alloc) inside it is its result, not an ignored
# exception (search_errors.hh): cky_search_begin(), cky_guarded(self._step()), cky_search_end().
cdef extern from "search_errors.hh":
    enum:
        CKY_SEARCH_OK
        CKY_SEARCH_NO_MEMORY
        CKY_SEARCH_FAILED
    void cky_search_begin()
    void cky_search_end()
    int cky_guarded "CKY_GUARDED"(int step) nogil

cdef extern from "prefetch.hh":
    void cky_prefetch(const void *address) nogil
