# distutils: language = c++
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The SDIG decoder's search (Ding and Palmer 2005, section 4), compiled.

The same dynamic program as the pure-Python reference decoder/sdig/search.py
(Search.search_reference), which tests compare this against; see that module for the model.
Python builds the packed forest of one input tree (decoder.sdig.search.Search.forest: the
ETs rooted at each node, their attached children and the ET pairs of each) and hands it
over as flat integer arrays:

    node_shape_start[v] .. [v+1]    the shapes (ET node sets) rooted at node v
    shape_child_start[s] .. [s+1]   shape s's attached children (children[]) and sides (sides[])
    shape_option_start[s] .. [s+1]  shape s's options (option_ids[]: ids from add_option)

`decode` then runs without the GIL: candidates of every node bottom up (children before
parents, `order`), each an option with one beam entry per attached child chosen by the
additive score (the `beam` best combinations), LM-scored with KenLM's chart states
through _lm's score_target when there is an LM; the beam of (node, parent English root)
is the `beam` best candidates with the transition log P(root | parent root) added. Sorts
are stable and sums run in the reference's order, so both give the same scores.

Options (the English side of an ET pair: KenLM ids, transition-vocabulary id of the root,
local features and their weighted score) are added once and kept across sentences;
transition counts come from `set_transitions`.
"""
from libc.math cimport log
from libc.stdint cimport int8_t, int32_t, int64_t, uint32_t, uint64_t
from cython.operator cimport dereference as deref
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

import numpy as np

from decoder._ext._kenlm cimport ChartState, Model
from decoder._ext._lm cimport LanguageModel, score_sentence_boundaries, score_target


cdef inline uint64_t pair_key(int32_t a, int32_t b) noexcept nogil:
    return (<uint64_t><uint32_t>a << 32) | <uint64_t><uint32_t>b


cdef void _load(vector[int32_t] &target, values):
    cdef const int32_t[::1] view = np.ascontiguousarray(values, dtype=np.int32)
    if view.shape[0]:
        target.assign(&view[0], &view[0] + view.shape[0])
    else:
        target.clear()


cdef class CompiledSearch:
    """One decoder's compiled search: weights, beam, LM, transitions and the options seen."""

    def __init__(self, weights, LanguageModel lm=None, int beam=1):
        weights = [float(w) for w in weights]
        if len(weights) != SDIG_N_FEATURES:
            raise ValueError(f"{len(weights)} weights, expected {SDIG_N_FEATURES}")
        cdef int i
        for i in range(SDIG_N_FEATURES):
            self.weights[i] = weights[i]
        self.lm = lm
        self.model = lm.model if lm is not None else NULL
        self.beam = max(1, beam)

    property beam_size:
        def __get__(self):
            return self.beam

    def set_transitions(self, int64_t total, int64_t vocabulary, unigram, parent_total, parent_types,
                        parents, kids, counts):
        """Witten-Bell transition tables over word ids 0..len(unigram)-1 (the counts of
        decoder.sdig.grammar.Transitions); (parents[i], kids[i]) was seen counts[i] times."""
        cdef const int64_t[::1] u = np.ascontiguousarray(unigram, dtype=np.int64)
        cdef const int64_t[::1] t = np.ascontiguousarray(parent_total, dtype=np.int64)
        cdef const int64_t[::1] y = np.ascontiguousarray(parent_types, dtype=np.int64)
        cdef const int32_t[::1] p = np.ascontiguousarray(parents, dtype=np.int32)
        cdef const int32_t[::1] k = np.ascontiguousarray(kids, dtype=np.int32)
        cdef const int64_t[::1] c = np.ascontiguousarray(counts, dtype=np.int64)
        cdef Py_ssize_t i
        self.total, self.vocabulary = total, vocabulary
        self.unigram.clear()
        self.parent_total.clear()
        self.parent_types.clear()
        for i in range(u.shape[0]):
            self.unigram.push_back(u[i])
            self.parent_total.push_back(t[i])
            self.parent_types.push_back(y[i])
        self.pair_count.clear()
        for i in range(p.shape[0]):
            self.pair_count[pair_key(p[i], k[i])] = c[i]

    def add_word(self):
        """A new transition-vocabulary word, never seen in the transitions: its id."""
        self.unigram.push_back(0)
        self.parent_total.push_back(0)
        self.parent_types.push_back(0)
        return self.unigram.size() - 1

    def transition_logprob(self, int32_t parent, int32_t child):
        return self.transition(parent, child)

    def add_option(self, lm_ids, int32_t root_word, local, double score):
        """Register an option: its English words' KenLM ids, its root's transition-vocabulary id,
        its local features (FEATURES order) and their weighted score. Returns its id."""
        cdef SdigOption option
        cdef int i
        local = [float(x) for x in local]
        option.word_start = self.lm_words.size()
        option.length = len(lm_ids)
        option.root_word = root_word
        option.score = score
        for i in range(SDIG_N_FEATURES):
            option.local[i] = local[i]
        for w in lm_ids:
            self.lm_words.push_back(w)
        self.options.push_back(option)
        return self.options.size() - 1

    def decode(self, order, node_shape_start, shape_child_start, children, sides, shape_option_start,
               option_ids, int32_t root_node, int32_t root_word, int k):
        """Search one forest (arrays described in the module docstring; `order`: every node,
        children before parents). Returns (final hypotheses best first: (entry id, score,
        features), statistics); at most k of them, from a beam of max(beam, k)."""
        _load(self.node_shape_start, node_shape_start)
        _load(self.shape_child_start, shape_child_start)
        _load(self.children, children)
        _load(self.shape_option_start, shape_option_start)
        _load(self.option_ids, option_ids)
        cdef const int8_t[::1] side_view = np.ascontiguousarray(sides, dtype=np.int8)
        self.sides.clear()
        cdef Py_ssize_t i
        for i in range(side_view.shape[0]):
            self.sides.push_back(side_view[i])
        cdef const int32_t[::1] order_view = np.ascontiguousarray(order, dtype=np.int32)
        cdef int32_t n = order_view.shape[0]
        cdef int32_t saved_beam = self.beam
        self.beam = max(self.beam, k)
        self.candidates.clear()
        self.chosen.clear()
        self.entries.clear()
        self.states.clear()
        self.memo.clear()
        self.node_candidate_start.assign(n, 0)
        self.node_candidate_end.assign(n, 0)
        self.n_states = 0
        self.n_lm_calls = 0
        cdef int64_t top
        cdef vector[SdigScored] finals
        cdef SdigScored scored
        cdef vector[SdigEntry] final_entries
        cdef SdigEntry entry
        cdef ChartState out
        cdef float increment
        cdef double score
        cdef int32_t j, start, count
        try:
            with nogil:
                for i in range(n):
                    self.inner(order_view[i])
                top = self.best(root_node, root_word)
                start = <int32_t>(top >> 32)
                count = <int32_t><uint32_t>top
                for j in range(count):
                    entry = self.entries[start + j]
                    if self.model != NULL:
                        increment = score_sentence_boundaries(
                            self.model, &self.states[self.candidates[entry.candidate].state], &out, NULL)
                        self.n_lm_calls += 1
                        entry.features[SDIG_LM] += increment
                        score = 0.0
                        for i in range(SDIG_N_FEATURES):
                            if self.weights[i] != 0:
                                score += self.weights[i] * entry.features[i]
                        entry.score = score
                    final_entries.push_back(entry)
                    scored.score = entry.score
                    scored.index = start + j
                    finals.push_back(scored)
                if self.model != NULL:
                    sdig_sort_best_first(finals.data(), finals.size())
        finally:
            self.beam = saved_beam
        out_list = []
        for j in range(min(<int32_t>finals.size(), max(k, 1))):
            entry = final_entries[finals[j].index - start]
            out_list.append((finals[j].index, entry.score, tuple(entry.features[i] for i in range(SDIG_N_FEATURES))))
        stats = {"states": self.n_states, "lm_calls": self.n_lm_calls, "candidates": self.candidates.size(),
                 "entries": self.entries.size()}
        return out_list, stats

    def entry(self, int32_t e):
        """(score, transition, candidate id, features) of beam entry e of the last decode."""
        cdef SdigEntry entry = self.entries[e]
        return entry.score, entry.transition, entry.candidate, tuple(entry.features[i] for i in range(SDIG_N_FEATURES))

    def candidate(self, int32_t c):
        """(option id, shape id, chosen entry ids, LM increment) of candidate c of the last decode."""
        cdef SdigCandidate candidate = self.candidates[c]
        cdef int32_t n = self.shape_child_start[candidate.shape + 1] - self.shape_child_start[candidate.shape]
        return (candidate.option, candidate.shape, [self.chosen[candidate.chosen_start + i] for i in range(n)],
                candidate.increment)

    # ------------------------------------------------------------------ nogil core

    cdef double transition(self, int32_t parent, int32_t child) noexcept nogil:
        """log P(child | parent), Witten-Bell towards the add-one unigram (Transitions.logprob)."""
        cdef double unigram = <double>(self.unigram[child] + 1) / <double>(self.total + self.vocabulary)
        cdef int64_t types = self.parent_types[parent]
        if types == 0:
            return log(unigram)
        cdef int64_t seen = 0
        cdef unordered_map[uint64_t, int64_t].iterator it = self.pair_count.find(pair_key(parent, child))
        if it != self.pair_count.end():
            seen = deref(it).second
        return log((<double>seen + <double>types * unigram) / <double>(self.parent_total[parent] + types))

    cdef int64_t best(self, int32_t node, int32_t parent_root) noexcept nogil:
        """The beam of (node, parent root): (start << 32 | count) of its entries."""
        cdef uint64_t key = pair_key(node, parent_root)
        cdef unordered_map[uint64_t, int64_t].iterator it = self.memo.find(key)
        if it != self.memo.end():
            return deref(it).second
        self.n_states += 1
        cdef int32_t first = self.node_candidate_start[node], last = self.node_candidate_end[node]
        cdef vector[SdigScored] scored
        cdef vector[double] transitions
        cdef SdigScored item
        cdef double t
        cdef int32_t c, i, j, n_children
        cdef double w_transition = self.weights[SDIG_TRANSITION]
        scored.reserve(last - first)
        transitions.reserve(last - first)
        for c in range(first, last):
            t = self.transition(parent_root, self.options[self.candidates[c].option].root_word)
            item.score = self.candidates[c].score + w_transition * t
            item.index = c - first
            scored.push_back(item)
            transitions.push_back(t)
        sdig_sort_best_first(scored.data(), scored.size())
        cdef int32_t keep = min(<int32_t>scored.size(), self.beam)
        cdef int32_t start = self.entries.size()
        cdef SdigEntry entry
        cdef SdigCandidate *candidate
        cdef SdigOption *option
        cdef SdigEntry *child
        for j in range(keep):
            candidate = &self.candidates[first + scored[j].index]
            option = &self.options[candidate.option]
            entry.score = scored[j].score
            entry.transition = transitions[scored[j].index]
            entry.candidate = first + scored[j].index
            for i in range(SDIG_N_FEATURES):
                entry.features[i] = option.local[i]
            entry.features[SDIG_TRANSITION] += entry.transition
            entry.features[SDIG_LM] += candidate.increment
            n_children = self.shape_child_start[candidate.shape + 1] - self.shape_child_start[candidate.shape]
            for c in range(n_children):
                child = &self.entries[self.chosen[candidate.chosen_start + c]]
                for i in range(SDIG_N_FEATURES):
                    entry.features[i] += child.features[i]
            self.entries.push_back(entry)
        cdef int64_t found = (<int64_t>start << 32) | keep
        self.memo[key] = found
        return found

    cdef void inner(self, int32_t node) noexcept nogil:
        """The candidates of node (after those of every node below it)."""
        self.node_candidate_start[node] = self.candidates.size()
        cdef int32_t s, o, c, p, h, q, m, n_children, n_partials, n_kept, stride, start, count, root, side
        cdef int32_t child_start, option_id
        cdef int64_t found
        cdef vector[int64_t] lists
        cdef vector[double] partial_scores, next_scores
        cdef vector[int32_t] partial_chosen, next_chosen
        cdef vector[SdigScored] merged
        cdef vector[int32_t] target
        cdef vector[const ChartState *] pointers
        cdef SdigScored item
        cdef SdigCandidate candidate
        cdef SdigOption *option
        cdef ChartState out
        cdef float increment
        cdef int32_t first_shape = self.node_shape_start[node], last_shape = self.node_shape_start[node + 1]
        for s in range(first_shape, last_shape):
            child_start = self.shape_child_start[s]
            n_children = self.shape_child_start[s + 1] - child_start
            for o in range(self.shape_option_start[s], self.shape_option_start[s + 1]):
                option_id = self.option_ids[o]
                option = &self.options[option_id]
                root = option.root_word
                lists.clear()
                for c in range(n_children):
                    lists.push_back(self.best(self.children[child_start + c], root))
                option = &self.options[option_id]
                # the best `beam` combinations of one entry per child by additive score (_combine)
                partial_scores.clear()
                partial_chosen.clear()
                partial_scores.push_back(option.score)
                stride = 0
                for c in range(n_children):
                    start = <int32_t>(lists[c] >> 32)
                    count = <int32_t><uint32_t>lists[c]
                    n_partials = partial_scores.size()
                    if count == 1 and n_partials == 1:
                        partial_scores[0] = partial_scores[0] + self.entries[start].score
                        partial_chosen.push_back(start)
                    else:
                        merged.clear()
                        for p in range(n_partials):
                            for h in range(count):
                                item.score = partial_scores[p] + self.entries[start + h].score
                                item.index = p * count + h
                                merged.push_back(item)
                        sdig_sort_best_first(merged.data(), merged.size())
                        n_kept = min(<int32_t>merged.size(), self.beam)
                        next_scores.clear()
                        next_chosen.clear()
                        for m in range(n_kept):
                            p = merged[m].index // count
                            h = merged[m].index % count
                            next_scores.push_back(merged[m].score)
                            for q in range(stride):
                                next_chosen.push_back(partial_chosen[p * stride + q])
                            next_chosen.push_back(start + h)
                        partial_scores.swap(next_scores)
                        partial_chosen.swap(next_chosen)
                    stride += 1
                for p in range(<int32_t>partial_scores.size()):
                    candidate.score = partial_scores[p]
                    candidate.increment = 0.0
                    candidate.option = option_id
                    candidate.shape = s
                    candidate.chosen_start = self.chosen.size()
                    candidate.state = -1
                    for q in range(stride):
                        self.chosen.push_back(partial_chosen[p * stride + q])
                    if self.model != NULL:
                        # English order (_order): L children, l (moved) children, the ET's words,
                        # r (moved) children, R children; children in source order on each side
                        target.clear()
                        pointers.clear()
                        for side in range(SIDE_LEFT, SIDE_MOVED_LEFT + 1):
                            for c in range(n_children):
                                if self.sides[child_start + c] == side:
                                    pointers.push_back(&self.states[self.candidates[
                                        self.entries[partial_chosen[p * stride + c]].candidate].state])
                                    target.push_back(-<int32_t>pointers.size())
                        for q in range(option.length):
                            target.push_back(self.lm_words[option.word_start + q])
                        for side in range(SIDE_MOVED_RIGHT, SIDE_RIGHT + 1):
                            for c in range(n_children):
                                if self.sides[child_start + c] == side:
                                    pointers.push_back(&self.states[self.candidates[
                                        self.entries[partial_chosen[p * stride + c]].candidate].state])
                                    target.push_back(-<int32_t>pointers.size())
                        increment = score_target(self.model, target.data(), target.size(), pointers.data(),
                                                 &out, NULL)
                        self.n_lm_calls += 1
                        candidate.increment = increment
                        candidate.score = candidate.score + self.weights[SDIG_LM] * candidate.increment
                        candidate.state = self.states.size()
                        self.states.push_back(out)
                    self.candidates.push_back(candidate)
        self.node_candidate_end[node] = self.candidates.size()
