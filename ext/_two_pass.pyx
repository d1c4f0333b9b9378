# distutils: language = c++
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Two-pass LM-driven hypergraph search (Venugopal, Zollmann and Vogel 2007), compiled.

`TwoPassSearch` is a ChartSearch (same grammar arrays, LM scoring through its
cache, counters). First pass: `decode` with `recombine_on_symbol` set, so items
are [X, i, j] (and unary round) carrying the KenLM state e^1 and score w^1 of
their best member, with every popped hyperedge kept. Second pass (`hsearch`,
H.Search, section 3.2), without the GIL: partial items [[e; alpha]] where e is the
KenLM state of "<s> output so far" and alpha the words and item references left
in target order. Score = exact part (rule weights of the unwound hyperedges, LM of
the output) + estimate of alpha (each remaining instance's w^1, plus KenLM's
RuleScore of e alpha </s> over the items' e^1, which corrects their left-edge
estimates and scores the n-grams across block boundaries). Unwinding the leftmost
reference replaces every block of its instance by one hyperedge's blocks (the
monolingual binarization's items carry several); leading words move into e.
Recombination: equal e (KenLM state) and equal alpha (instances renumbered by
first appearance), keeping the k best per class; 64-bit hash keys. Pruning: beam
(below the best score seen), agenda size (best kept), number of pops. The pure-
Python reference is decoder/search/two_pass_reference.py.
"""
from libc.math cimport INFINITY
from libc.stdint cimport int8_t, int32_t, int64_t, uint32_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._chart cimport (CKY_SEARCH_NO_MEMORY, CKY_SEARCH_OK, EDGE_GLUE_CONCAT, EDGE_GLUE_START, EDGE_OOV,
                                  ChartSearch, CkyHeapEntry, cky_guarded, cky_heap_pop, cky_heap_push, cky_mix,
                                  cky_search_begin, cky_search_end)
from decoder._ext._kenlm cimport ChartState

cdef extern from "two_pass_containers.hh":
    void two_pass_trim_heap(vector[CkyHeapEntry] &heap, size_t keep) nogil
    void two_pass_best_edges(vector[CkyHeapEntry] &edges, size_t keep) nogil


cdef uint64_t TARGET_SEED = 0x74776f70617373   # "twopass": target-side hashes of the second pass

# the experimental second_pass_stop (decoder.settings.SECOND_PASS_STOPS, in that order)
cdef enum:
    STOP_BUDGET = 0
    STOP_BOUND = 1
    STOP_FIRST = 2


cdef class TwoPassSearch(ChartSearch):
    """ChartSearch whose first pass recombines on (X, i, j) and whose second pass is H.Search."""

    def __init__(self, dict arrays, lm, n_symbols, goal_symbol, settings, double weight_lm, double weight_oov,
                 double weight_glue, double weight_word_count, *, bint reuse_suffix=True):
        """As ChartSearch. reuse_suffix: reuse the LM score of the unchanged tail of a partial item's alpha
        (off: rescore all of alpha; the same search, for tests)."""
        super().__init__(arrays, lm, n_symbols, goal_symbol, settings, weight_lm, weight_oov, weight_glue,
                         weight_word_count)
        self.recombine_on_symbol = True
        self.reuse_suffix = reuse_suffix

    def configure(self, settings, double weight_lm, double weight_oov, double weight_glue,
                  double weight_word_count):
        """ChartSearch.configure, plus the second pass's settings (decoder.settings.SearchSettings:
        two_pass_beam, agenda_limit, max_pops, kbest_per_class; and of its experimental table edge_limit,
        first_pass_items, first_pass_threshold, second_pass_stop)."""
        ChartSearch.configure(self, settings, weight_lm, weight_oov, weight_glue, weight_word_count)
        experimental = settings.experimental
        self.beam = settings.two_pass_beam          # inf: no beam
        self.agenda_limit = settings.agenda_limit   # 0: no limit
        self.max_pops = settings.max_pops           # -1: no limit
        self.edge_limit = experimental.edge_limit   # 0: every hyperedge the first pass kept
        self.k = max(settings.kbest_per_class, 1)
        self.round_item_limit = experimental.first_pass_items        # ChartSearch._search's round bounds
        self.round_score_beam = experimental.first_pass_threshold    # (the paper's beta)
        self.second_pass_stop = ("budget", "bound", "first").index(experimental.second_pass_stop)

    def hsearch(self, int bos_id, int eos_id, int max_results):
        """The second pass over the chart `decode` filled. Returns up to max_results complete
        derivations, best first: (score, lm log10, ((instance, edge, first tail instance), ...))."""
        self.bos_id = bos_id
        self.eos_id = eos_id
        cdef int status
        cky_search_begin()  # a std::bad_alloc in the second pass is its status (search_errors.hh)
        try:
            with nogil:
                status = cky_guarded(self._second_pass_step())
        finally:
            cky_search_end()
        if status == CKY_SEARCH_NO_MEMORY:
            raise MemoryError("the two-pass search's second pass ran out of memory (std::bad_alloc): set "
                              "max_pops or agenda_limit lower")
        if status != CKY_SEARCH_OK:
            raise RuntimeError("the two-pass search's second pass failed with a C++ exception")
        order = sorted(self.complete, key=lambda p: -self.partials[p].score)[:max_results]
        out = []
        for p in order:
            steps = []
            q = p
            while self.partials[q].parent >= 0:
                steps.append((self.partials[q].instance, self.partials[q].edge, self.partials[q].base))
                q = self.partials[q].parent
            steps.reverse()
            out.append((self.partials[p].score, self.partials[p].lm_exact, tuple(steps)))
        return out

    cdef int _second_pass_step(self) noexcept nogil:
        self._second_pass()
        return 0

    def popped_scores(self):
        """Scores of the partial items the last hsearch popped, in order (for tests of the agenda)."""
        return [self.partials[p].score for p in self.popped]

    # ---- LM through ChartSearch._score (its cache and counters)

    cdef float _extend(self, const ChartState *prefix, uint64_t prefix_hash, const int32_t *words, int32_t n,
                       ChartState *out, uint64_t *out_hash) noexcept nogil:
        """LM of words appended to the output whose state is prefix (n == 0 with prefix NULL: <s>)."""
        cdef int32_t t
        cdef uint64_t h = TARGET_SEED
        self.child_pointers.clear()
        self.child_hashes.clear()
        self.target.clear()
        if prefix != NULL:
            self.child_pointers.push_back(prefix)
            self.child_hashes.push_back(prefix_hash)
            self.target.push_back(-1)
        for t in range(n):
            self.target.push_back(words[t])
        for t in range(<int32_t>self.target.size()):
            h = cky_mix(h, <uint64_t><uint32_t>self.target[t])
        return self._score(self.target.data(), self.target.size(), h, out, out_hash)

    cdef float _chain(self, const ChartState *first, uint64_t first_hash, const Element *rest, int32_t n,
                      bint eos) noexcept nogil:
        """RuleScore of [first] rest[0:n] (</s>): what the elements add after the state `first`."""
        cdef int32_t t, offset
        cdef uint64_t h = TARGET_SEED
        cdef ChartState out
        cdef uint64_t out_hash
        self.child_pointers.clear()
        self.child_hashes.clear()
        self.target.clear()
        self.child_pointers.push_back(first)
        self.child_hashes.push_back(first_hash)
        self.target.push_back(-1)
        for t in range(n):
            if rest[t].word >= 0:
                self.target.push_back(rest[t].word)
                continue
            offset = self.items[rest[t].item].state_offset + rest[t].block
            self.child_pointers.push_back(&self.states[offset])
            self.child_hashes.push_back(self.state_hashes[offset])
            self.target.push_back(-<int32_t>self.child_pointers.size())
        if eos:
            self.target.push_back(self.eos_id)
        for t in range(<int32_t>self.target.size()):
            h = cky_mix(h, <uint64_t><uint32_t>self.target[t])
        return self._score(self.target.data(), self.target.size(), h, &out, &out_hash)

    cdef double _estimate(self, Partial *partial, const Element *rest, int32_t anchor, float suffix_lm) noexcept nogil:
        """Estimate of alpha = rest[0:partial.rest_n] after e = partial.prefix: w^1 of each remaining
        instance + weighted RuleScore of e alpha </s> over the e^1 states. That RuleScore splits after
        a reference whose state has a full left side (the words after it are scored against its own
        right state): anchor >= 0 names such a reference behind which alpha equals the parent's
        suffix, whose LM (suffix_lm) is reused; otherwise the first such reference after alpha[0]
        splits it, and its suffix is recorded for the children. Sets partial.suffix_at/suffix_lm.
        A GOAL item first in alpha (e is then <s>) has <s> and its first words scored already (the glue
        start: its state is "<s> output"): the RuleScore starts from its state instead of e."""
        cdef int32_t n = partial.rest_n
        cdef double total = 0.0
        cdef int32_t t, s, k = -1, offset, skip = 0
        cdef bint seen
        cdef float lm
        cdef const ChartState *first = &partial.prefix
        cdef uint64_t first_hash = partial.prefix_hash
        if n > 0 and rest[0].word < 0 and self.items[rest[0].item].symbol == self.goal_symbol:
            offset = self.items[rest[0].item].state_offset
            first = &self.states[offset]
            first_hash = self.state_hashes[offset]
            skip = 1
        self.seen_instances.clear()
        for t in range(n):
            if rest[t].word >= 0:
                continue
            seen = False
            for s in range(<int32_t>self.seen_instances.size()):
                if self.seen_instances[s] == rest[t].instance:
                    seen = True
                    break
            if not seen:
                self.seen_instances.push_back(rest[t].instance)
                total += self.items[rest[t].item].score
            if k < 0 and t >= 1 and self.reuse_suffix and \
                    self.states[self.items[rest[t].item].state_offset + rest[t].block].left.full:
                k = t
        partial.suffix_at = -1
        partial.suffix_lm = 0.0
        if anchor >= 0 and self.reuse_suffix:
            lm = self._chain(first, first_hash, rest + skip, anchor + 1 - skip, False) + suffix_lm
            partial.suffix_at = anchor + 1
            partial.suffix_lm = suffix_lm
        elif k >= 1:
            offset = self.items[rest[k].item].state_offset + rest[k].block
            partial.suffix_lm = self._chain(&self.states[offset], self.state_hashes[offset], rest + k + 1,
                                            n - k - 1, True)
            partial.suffix_at = k + 1
            lm = self._chain(first, first_hash, rest + skip, k + 1 - skip, False) + partial.suffix_lm
        else:
            lm = self._chain(first, first_hash, rest + skip, n - skip, True)
        return total + self.weight_lm * lm

    # ---- partial items

    cdef uint64_t _key(self, const Partial *partial) noexcept nogil:
        """Recombination class: e's state and alpha, instances numbered by first appearance."""
        cdef uint64_t h = cky_mix(<uint64_t>0x5eed, partial.prefix_hash)
        cdef int64_t t
        cdef int32_t s, index
        cdef const Element *element
        self.seen_instances.clear()
        for t in range(partial.rest_lo, partial.rest_lo + partial.rest_n):
            element = &self.elements[t]
            if element.word >= 0:
                h = cky_mix(h, <uint64_t>element.word)
                continue
            index = -1
            for s in range(<int32_t>self.seen_instances.size()):
                if self.seen_instances[s] == element.instance:
                    index = s
                    break
            if index < 0:
                index = self.seen_instances.size()
                self.seen_instances.push_back(element.instance)
            h = cky_mix(h, (<uint64_t>element.item << 24) ^ (<uint64_t>element.block << 16) ^ <uint64_t>index
                        ^ (<uint64_t>1 << 63))
        return h

    cdef void _push(self, Partial *partial) noexcept nogil:
        cdef uint64_t key
        cdef int32_t *found
        cdef int32_t cls, slot, worst = -1, m, member, p
        if partial.score > self.best_seen:
            self.best_seen = partial.score
        if partial.score < self.best_seen - self.beam:
            return
        if partial.rest_n == 0:
            if partial.score > self.best_complete:
                self.best_complete = partial.score
            self.partials.push_back(partial[0])
            self.complete.push_back(self.partials.size() - 1)
            return
        key = self._key(partial)
        found = self.class_index.find(key)
        if found == NULL:
            cls = self.class_members.size() // self.k
            self.class_index.set(key, cls)
            for m in range(self.k):
                self.class_members.push_back(-1)
        else:
            cls = found[0]
        slot = -1
        for m in range(self.k):
            member = self.class_members[cls * self.k + m]
            if member < 0:
                slot = m
                break
            if worst < 0 or self.partials[member].score < self.partials[self.class_members[cls * self.k + worst]].score:
                worst = m
        if slot < 0:
            member = self.class_members[cls * self.k + worst]
            if self.partials[member].score >= partial.score:
                return  # filed into a class with better items: not scheduled
            self.partials[member].dead = 1
            slot = worst
        self.partials.push_back(partial[0])
        p = self.partials.size() - 1
        self.class_members[cls * self.k + slot] = p
        cky_heap_push(self.agenda, partial.score, p)
        if self.agenda_limit > 0 and self.agenda.size() > <size_t>(2 * self.agenda_limit):
            two_pass_trim_heap(self.agenda, self.agenda_limit)  # amortized: trim at twice the limit

    cdef void _expand_edge(self, int32_t e, int32_t base) noexcept nogil:
        """expansion[expansion_lo[b]:expansion_lo[b+1]] = block b of hyperedge e, tails as instances base..."""
        cdef int32_t rule = self.edges[e].rule
        cdef int32_t tails[2]
        cdef int32_t n_tails = 0, t, b, c, symbol
        cdef int64_t lo, hi, r
        cdef Element element
        self.expansion.clear()
        self.expansion_lo.clear()
        self.carried.clear()
        element.item = -1
        element.block = 0
        element.instance = -1
        if rule == EDGE_OOV:
            self.expansion_lo.push_back(0)
            element.word = self.words_lm[self.edges[e].tail0]
            self.expansion.push_back(element)
            self.expansion_lo.push_back(1)
            return
        if self.edges[e].tail0 >= 0:
            tails[n_tails] = self.edges[e].tail0
            n_tails += 1
        if self.edges[e].tail1 >= 0:
            tails[n_tails] = self.edges[e].tail1
            n_tails += 1
        element.word = -1
        for t in range(n_tails):
            for b in range(self.items[tails[t]].n_states):
                element.item = tails[t]
                element.block = b
                element.instance = base + t
                self.carried.push_back(element)
        if rule == EDGE_GLUE_START or (rule >= 0 and self.rule_carries[rule]):
            for c in range(<int32_t>self.carried.size()):
                self.expansion_lo.push_back(self.expansion.size())
                self.expansion.push_back(self.carried[c])
        elif rule == EDGE_GLUE_CONCAT:
            self.expansion_lo.push_back(0)
            self.expansion.push_back(self.carried[0])
            self.expansion.push_back(self.carried[1])
        else:
            self.expansion_lo.push_back(0)
            lo, hi = self.rule_target_offsets[rule], self.rule_target_offsets[rule + 1]
            for r in range(lo, hi):
                symbol = self.rule_target_lm[r]
                if symbol >= 0:
                    element.word = symbol
                    element.item = -1
                    element.instance = -1
                    self.expansion.push_back(element)
                else:
                    self.expansion.push_back(self.carried[-1 - symbol])
        self.expansion_lo.push_back(self.expansion.size())

    cdef int32_t _unwind(self, int32_t p, bint greedy) noexcept nogil:
        """One partial item per hyperedge of the leftmost reference's item (greedy: its best
        hyperedge only, appended without recombination; returns its id)."""
        cdef Partial parent = self.partials[p]
        cdef Element first = self.elements[parent.rest_lo]
        cdef int32_t e, n_tails, m, t, rank = 0, anchor
        cdef bint suffix_kept
        cdef int64_t r, x
        cdef Partial child
        cdef float lm
        cdef ChartState state
        cdef uint64_t state_hash
        cdef Element element
        cdef CkyHeapEntry entry
        self.item_edges.clear()
        if greedy:
            entry.index = self.items[first.item].best_edge
            self.item_edges.push_back(entry)
        else:
            e = self.items[first.item].first_edge
            while e >= 0:
                entry.index = e
                entry.score = self.edges[e].score
                if self.edges[e].rule != EDGE_OOV:  # (an OOV edge's tail0 is a source position)
                    if self.edges[e].tail0 >= 0:
                        entry.score += self.items[self.edges[e].tail0].score
                    if self.edges[e].tail1 >= 0:
                        entry.score += self.items[self.edges[e].tail1].score
                self.item_edges.push_back(entry)
                e = self.edges[e].next_edge
            two_pass_best_edges(self.item_edges, self.edge_limit)
        for rank in range(<int32_t>self.item_edges.size()):
            e = self.item_edges[rank].index
            n_tails = 0
            if self.edges[e].rule != EDGE_OOV:
                n_tails = (self.edges[e].tail0 >= 0) + (self.edges[e].tail1 >= 0)
            self._expand_edge(e, parent.next_instance)
            self.new_rest.clear()
            anchor = -1  # where the parent's suffix anchor lands, if its suffix is unchanged
            suffix_kept = parent.suffix_at > 0
            for r in range(parent.rest_lo, parent.rest_lo + parent.rest_n):
                element = self.elements[r]
                if element.word < 0 and element.instance == first.instance:
                    if r - parent.rest_lo >= parent.suffix_at - 1:
                        suffix_kept = False
                    for x in range(self.expansion_lo[element.block], self.expansion_lo[element.block + 1]):
                        self.new_rest.push_back(self.expansion[x])
                else:
                    if r - parent.rest_lo == parent.suffix_at - 1:
                        anchor = self.new_rest.size()
                    self.new_rest.push_back(element)
            self.words_scratch.clear()
            m = 0
            while m < <int32_t>self.new_rest.size() and self.new_rest[m].word >= 0:
                self.words_scratch.push_back(self.new_rest[m].word)
                m += 1
            state = parent.prefix
            state_hash = parent.prefix_hash
            lm = 0.0
            if m > 0:
                lm = self._extend(&parent.prefix, parent.prefix_hash, self.words_scratch.data(), m, &state, &state_hash)
            if m == <int32_t>self.new_rest.size():
                self.words_scratch.clear()
                self.words_scratch.push_back(self.eos_id)
                lm += self._extend(&state, state_hash, self.words_scratch.data(), 1, &child.prefix, &child.prefix_hash)
            else:
                child.prefix = state
                child.prefix_hash = state_hash
            child.lm_exact = parent.lm_exact + lm
            child.exact = parent.exact + (self.edges[e].score - self.weight_lm * self.edges[e].lm) + self.weight_lm * lm
            child.rest_lo = self.elements.size()
            child.rest_n = self.new_rest.size() - m
            for t in range(m, <int32_t>self.new_rest.size()):
                self.elements.push_back(self.new_rest[t])
            child.score = child.exact
            child.suffix_at = -1
            child.suffix_lm = 0.0
            if child.rest_n > 0:
                child.score += self._estimate(&child, &self.elements[child.rest_lo],
                                              anchor - m if suffix_kept and anchor >= 0 else -1, parent.suffix_lm)
            child.next_instance = parent.next_instance + n_tails
            child.parent = p
            child.edge = e
            child.instance = first.instance
            child.base = parent.next_instance
            child.dead = 0
            self.unwindings += 1
            if greedy:
                self.partials.push_back(child)
                return self.partials.size() - 1
            self._push(&child)
        return -1

    cdef void _second_pass(self) noexcept nogil:
        cdef Partial start
        cdef Element root
        cdef int32_t p, r, lo, count, start_id = -1
        cdef float lm
        self.partials.clear()
        self.elements.clear()
        self.agenda.clear()
        self.class_index.clear()
        self.class_members.clear()
        self.complete.clear()
        self.popped.clear()
        self.best_seen = -INFINITY
        self.best_complete = -INFINITY
        self.agenda_pops = 0
        self.unwindings = 0
        if self.n == 0:
            return
        lo = self.goal_list_lo[self.n]
        count = self.goal_list_n[self.n]
        for r in range(count):  # one GOAL item when items recombine on the symbol
            root.word = -1
            root.item = self.item_lists[lo + r]
            root.block = 0
            root.instance = 0
            self.elements.push_back(root)
            lm = self._extend(NULL, 0, &self.bos_id, 1, &start.prefix, &start.prefix_hash)
            start.lm_exact = 0.0
            start.exact = 0.0
            start.rest_lo = self.elements.size() - 1
            start.rest_n = 1
            start.score = self._estimate(&start, &self.elements[start.rest_lo], -1, 0.0)
            start.next_instance = 1
            start.parent = -1
            start.edge = -1
            start.instance = -1
            start.base = 0
            start.dead = 0
            if start_id < 0:
                start_id = self.partials.size()
            self._push(&start)
        while self.agenda.size() > 0 and (self.max_pops < 0 or <long long>self.agenda_pops < self.max_pops):
            if self.complete.size() > 0 and (self.second_pass_stop == STOP_FIRST or (
                    self.second_pass_stop == STOP_BOUND and self.best_complete >= self.agenda[0].score)):
                break
            p = cky_heap_pop(self.agenda)
            if self.partials[p].dead or self.partials[p].score < self.best_seen - self.beam:
                continue
            self.agenda_pops += 1
            self.popped.push_back(p)
            self._unwind(p, False)
        if self.complete.size() == 0 and start_id >= 0 and start_id < <int32_t>self.partials.size():
            # Pruned everything: the first pass's best derivation, rescored exactly.
            p = start_id
            while self.partials[p].rest_n > 0:
                p = self._unwind(p, True)
            self.complete.push_back(p)
