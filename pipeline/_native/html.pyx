# cython: language_level=3
"""HTML parse and block features, compiled: the parser target of :mod:`~pipeline.steps.blocks.parse` (fed by libxml2's
HTML parser through our own callbacks, :func:`parse_html`, where lxml's module exposes it), the page's feature matrix
and the second stage's context features of :mod:`~pipeline.steps.blocks.features`, and the depth guard's tag scan of
:func:`pipeline.steps.extractors.nesting_depth`, computing exactly what their Python reference code computes, bit for
bit (``tests/test_native.py`` pins it): the same float32/float64 roundings in the same order, numpy's pairwise
summation, numpy's own transcendental functions (called once per page on whole arrays).

The tag sets and characters it tests against are handed in by the modules that own those rules (:class:`BlockTarget`,
:func:`page_rows`, :class:`DepthScan`), so each rule lives in one place and this module imports nothing of warcplex.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
from cpython.unicode cimport (PyUnicode_4BYTE_KIND, PyUnicode_AsUTF8, PyUnicode_DecodeUTF8, PyUnicode_Find,
                              PyUnicode_FromKindAndData)
from libc.math cimport log1p
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy, memset, strcmp, strlen, strncmp

import numpy as np

from pipeline._native.common cimport (PyUnicode_DATA, PyUnicode_DecodeASCII, PyUnicode_FindChar, PyUnicode_GET_LENGTH,
                                      PyUnicode_IS_ASCII, PyUnicode_KIND, PyUnicode_READ, Py_UNICODE_ISLOWER, is_alpha,
                                      is_ascii_letter, is_unspaced, is_upper, out_char, pairwise)

include "version.pxi"

# libxml2's HTML parser, driven with our own SAX callbacks (parse_html): the library inside lxml's etree module,
# whose symbols are looked up at run time (lxml links libxml2 statically and exports its API), so the
# parser is the very one lxml runs and its events are the ones lxml's parser target receives.
cdef extern from "libxml/HTMLparser.h":
    ctypedef unsigned char xmlChar
    ctypedef void (*startElementSAXFunc)(void *ctx, const xmlChar *name, const xmlChar **atts) noexcept
    ctypedef void (*endElementSAXFunc)(void *ctx, const xmlChar *name) noexcept
    ctypedef void (*charactersSAXFunc)(void *ctx, const xmlChar *ch, int length) noexcept
    ctypedef void (*xmlStructuredErrorFunc)(void *user_data, const void *error) noexcept
    ctypedef struct xmlSAXHandler:
        unsigned int initialized
        void *startElementNs
        void *endElementNs
        startElementSAXFunc startElement
        endElementSAXFunc endElement
        charactersSAXFunc characters
        charactersSAXFunc cdataBlock
        void *processingInstruction
        void *comment
        void *reference
        xmlStructuredErrorFunc serror
        void *_private
    unsigned int XML_SAX2_MAGIC
    int HTML_PARSE_RECOVER, HTML_PARSE_NONET, HTML_PARSE_COMPACT

cdef extern from "dlfcn.h":
    void *dlopen(const char *filename, int flags)
    void *dlsym(void *handle, const char *symbol)
    int RTLD_NOW, RTLD_NOLOAD

cdef extern from *:
    """
    static __thread void *warcplex_sax_target = NULL;  /* the BlockTarget of the parse running on this thread */
    """
    void *warcplex_sax_target

cdef extern from "strings.h":
    int strcasecmp(const char *a, const char *b) nogil


def word_count(str text):
    """features.word_count: white-space separated words plus one per two unspaced-script characters."""
    cdef Py_ssize_t spaced = 0, unspaced = 0
    cdef bint in_word = False
    cdef Py_UCS4 c
    for c in text:
        if c.isspace():
            in_word = False
        else:
            if not in_word:
                spaced += 1
                in_word = True
            if c >= 0x0e00 and is_unspaced(c):
                unspaced += 1
    spaced += unspaced // 2
    return spaced if spaced > 1 else 1


# Bits of the filter of the primary text's 4-grams (_Grams): a block with a 4-gram not in it is not in the text.
cdef enum:
    GRAM_BITS = 17
    GRAM_WORDS = 2048  # 2 ** GRAM_BITS / 64


cdef inline Py_ssize_t _gram_bit(unsigned long long window) noexcept nogil:
    return <Py_ssize_t> ((window * 0x9E3779B97F4A7C15ULL) >> (64 - GRAM_BITS))


cdef class _Grams:
    """The 4-grams of a text in a bit filter: ``maybe_in`` is False only for texts with a 4-gram the text
    lacks (never a substring of it), so ``text in primary`` is searched for only where it may hold."""

    cdef unsigned long long bits[2048]  # GRAM_WORDS

    def __cinit__(self, str text):
        cdef unsigned long long window = 0
        cdef Py_ssize_t seen = 0, bit
        cdef Py_UCS4 c
        memset(self.bits, 0, sizeof(self.bits))
        for c in text:
            window = (window << 16) ^ <unsigned long long> c  # the last four characters (their low 16 bits)
            seen += 1
            if seen >= 4:
                bit = _gram_bit(window)
                self.bits[bit >> 6] |= 1ULL << (bit & 63)

    cdef bint maybe_in(self, str text):
        cdef unsigned long long window = 0
        cdef Py_ssize_t seen = 0, bit
        cdef Py_UCS4 c
        for c in text:
            window = (window << 16) ^ <unsigned long long> c
            seen += 1
            if seen >= 4:
                bit = _gram_bit(window)
                if not (self.bits[bit >> 6] >> (bit & 63)) & 1:
                    return False
        return True


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _base_rows(list blocks, str primary, list log_ppl, float[:, ::1] out, Py_ssize_t col, tuple tag_kinds,
                     str ends_sentence):
    """features._base of every block into columns ``col`` .. ``col + len(BASE) - 1`` of ``out`` (``tag_kinds``: the tag
    sets of the heading, list item, cell and code features; ``ends_sentence``: the characters that end a sentence)."""
    cdef frozenset headings = tag_kinds[0], list_items = tag_kinds[1], cells = tag_kinds[2], code = tag_kinds[3]
    cdef Py_ssize_t i, n_chars, spaced, unspaced, punct, letters, digits, title, n_words
    cdef bint in_word, scored
    cdef Py_UCS4 c
    cdef double ppl
    cdef str text, tag
    cdef _Grams grams = _Grams(primary)
    cdef Py_ssize_t n_primary = len(primary), after = 0, found
    for i in range(len(blocks)):
        block = blocks[i]
        text = block.text
        tag = block.tag
        n_chars = len(text)
        spaced = unspaced = punct = letters = digits = title = 0
        in_word = False
        for c in text:
            if c.isspace():
                in_word = False
                continue
            if not in_word:
                spaced += 1
                in_word = True
                if is_upper(c):
                    title += 1
            if is_alpha(c):
                letters += 1
            if c == u',' or c == u'.' or c == u'\u3001' or c == u'\u3002' or c == u'\uff0c':
                punct += 1
            elif u'0' <= c <= u'9':
                digits += 1
            elif c >= 0x0e00 and is_unspaced(c):
                unspaced += 1
        n_words = spaced + unspaced // 2
        if n_words < 1:
            n_words = 1
        ppl = log_ppl[i]
        scored = ppl == ppl
        out[i, col] = log1p(<double>n_words)
        out[i, col + 1] = <double>block.link_chars / n_chars
        found = -1
        if n_primary and grams.maybe_in(text):
            # blocks come in the primary text's order: look after the last one found first, then before it
            found = PyUnicode_Find(primary, text, after, n_primary, 1)
            if found == -1 and after:
                found = PyUnicode_Find(primary, text, 0, min(after + n_chars - 1, n_primary), 1)
            if found >= 0:
                after = found + n_chars
        out[i, col + 2] = 1.0 if found >= 0 else 0.0
        out[i, col + 3] = 1.0 if text[n_chars - 1] in ends_sentence else 0.0
        out[i, col + 4] = min(1.0, <double>punct / n_words)
        out[i, col + 5] = <double>digits / n_chars
        out[i, col + 6] = <double>title / n_words
        out[i, col + 7] = ppl if scored else 0.0
        out[i, col + 8] = 0.0 if scored else 1.0
        out[i, col + 9] = min(<double>block.depth, 30.0) / 30
        out[i, col + 10] = <double>letters / n_chars
        out[i, col + 11] = <double>(spaced - 1) / n_chars
        out[i, col + 12] = 1.0 if tag in headings else 0.0
        out[i, col + 13] = 1.0 if tag in list_items else 0.0
        out[i, col + 14] = 1.0 if tag in cells else 0.0
        out[i, col + 15] = 1.0 if tag in code or "pre" in block.ancestors else 0.0


cdef int _cmp_float(const void *a, const void *b) noexcept nogil:
    cdef float x = (<const float *> a)[0], y = (<const float *> b)[0]
    return (x > y) - (x < y)


cdef struct _Keyed:
    double value
    Py_ssize_t index


cdef int _cmp_keyed(const void *a, const void *b) noexcept nogil:
    """By value, then by position: the order of a stable sort."""
    cdef const _Keyed *x = <const _Keyed *> a
    cdef const _Keyed *y = <const _Keyed *> b
    if x.value != y.value:
        return -1 if x.value < y.value else 1
    return (x.index > y.index) - (x.index < y.index)


cdef void _rank(const double *values, const unsigned char *mask, Py_ssize_t n, double *out) noexcept nogil:
    """features._rank: each value's percentile rank among the masked values (ties by position), 0.5 elsewhere."""
    cdef Py_ssize_t i, m = 0
    cdef _Keyed *keyed = <_Keyed *> malloc(n * sizeof(_Keyed))
    for i in range(n):
        out[i] = 0.5
        if mask[i]:
            keyed[m].value = values[i]
            keyed[m].index = i
            m += 1
    if m > 1:
        qsort(keyed, m, sizeof(_Keyed), _cmp_keyed)
        for i in range(m):
            out[keyed[i].index] = <double>i / (m - 1)
    free(keyed)


cdef inline Py_ssize_t _bin(double value, const double[::1] edges) noexcept nogil:
    """np.digitize: the number of edges at or below ``value``."""
    cdef Py_ssize_t k = 0
    while k < edges.shape[0] and edges[k] <= value:
        k += 1
    return k


cdef Py_ssize_t _group_ids(list keys, Py_ssize_t[::1] ids) except -1:
    """Dense ids of equal keys in first-seen order (features._group_sizes); returns the number of groups."""
    cdef dict index = {}
    cdef Py_ssize_t i
    for i in range(len(keys)):
        ids[i] = index.setdefault(keys[i], len(index))
    return len(index)


@cython.boundscheck(False)
@cython.wraparound(False)
@cython.cdivision(True)
def page_rows(list blocks, str primary, list log_ppl, bint page_lm, float[:, ::1] X, const double[::1] word_bins,
              const double[::1] link_bins, const double[::1] ppl_bins, tuple tag_kinds, str ends_sentence):
    """features.featurize's dense matrix, computed as its numpy code computes it, into ``X`` (n x
    len(dense_names()), float32): bias, BASE, PAGE, the three one-hot bins, the neighbours and the window (the
    columns after those, features.NODES, are the caller's).
    Transcendental functions are numpy's own (np.expm1, np.log1p), sums are numpy's pairwise sums. ``tag_kinds``
    (features.HEADINGS, LIST_ITEMS, CELLS, CODE) and ``ends_sentence`` (features.ENDS_SENTENCE) are features.py's."""
    cdef Py_ssize_t n = len(blocks), i, j, k, m, lo, hi, n_groups
    cdef Py_ssize_t B = 1, P = 17, WB = 30
    cdef Py_ssize_t LB = WB + word_bins.shape[0] + 1
    cdef Py_ssize_t PB = LB + link_bins.shape[0] + 1
    cdef Py_ssize_t NB = PB + ppl_bins.shape[0] + 1
    cdef Py_ssize_t WIN = NB + 16
    cdef Py_ssize_t NEIGH[4]
    cdef Py_ssize_t SHIFT[4]
    cdef float a, b, page_ppl
    cdef double total, page_repeat, step, s, in_primary
    if X.shape[0] != n or X.shape[1] < WIN + 4:
        raise ValueError("X must be n x len(dense_names())")
    NEIGH[:] = [B + 0, B + 1, B + 2, B + 3]  # features.NEIGHBOUR: log_words, link_density, in_primary, ends_punct
    SHIFT[:] = [-1, -2, 1, 2]  # prev1, prev2, next1, next2
    _base_rows(blocks, primary, log_ppl, X, B, tag_kinds, ends_sentence)
    words_arr = np.expm1(np.asarray(X[:, B]).astype(np.float64))
    cdef const double[::1] words = words_arr
    cdef double[::1] rel = np.empty(n)
    cdef unsigned char[::1] scored = np.empty(n, dtype=np.uint8)
    cdef unsigned char[::1] every = np.ones(n, dtype=np.uint8)
    cdef float[::1] sorted_ppl = np.empty(n, dtype=np.float32)
    cdef double[::1] ppl_rank = np.empty(n), words_rank = np.empty(n)
    m = 0
    for i in range(n):
        rel[i] = X[i, B + 7]
        scored[i] = X[i, B + 8] == 0
        if scored[i]:
            sorted_ppl[m] = X[i, B + 7]
            m += 1
    page_ppl = 0.0  # np.median of the float32 values: the middle one, or the float32 mean of the middle two
    if m:
        qsort(&sorted_ppl[0], m, sizeof(float), _cmp_float)
        if m % 2:
            page_ppl = sorted_ppl[m // 2]
        else:
            a, b = sorted_ppl[m // 2 - 1], sorted_ppl[m // 2]
            page_ppl = (a + b) / <float>2.0
    _rank(&rel[0], &scored[0], n, &ppl_rank[0])
    _rank(&words[0], &every[0], n, &words_rank[0])
    in_primary = 0.0
    for i in range(n):
        in_primary += X[i, B + 2]
    # structure(): siblings (parent, tag) and repeats (tag, ancestors, class/id tokens)
    sib_ids_arr, rep_ids_arr = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] sib_ids = sib_ids_arr, rep_ids = rep_ids_arr
    _group_ids([(bl.parent, bl.tag) for bl in blocks], sib_ids)
    n_groups = _group_ids([(bl.tag, bl.ancestors, bl.attr_tokens) for bl in blocks], rep_ids)
    cdef Py_ssize_t[::1] sib_size = np.zeros(n, dtype=np.intp), rep_size = np.zeros(n_groups, dtype=np.intp)
    cdef double[::1] rep_words = np.zeros(n_groups), rep_links = np.zeros(n_groups)
    for i in range(n):
        sib_size[sib_ids[i]] += 1
        rep_size[rep_ids[i]] += 1
        rep_words[rep_ids[i]] += words[i]
        rep_links[rep_ids[i]] += <double>X[i, B + 1] * words[i]
    sib_minus, rep_minus = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] sib_m = sib_minus, rep_m = rep_minus
    cdef double[::1] repeated = np.empty(n)
    k = 0
    for i in range(n):
        sib_m[i] = sib_size[sib_ids[i]] - 1
        rep_m[i] = rep_size[rep_ids[i]] - 1
        if rep_m[i] >= 2:
            repeated[k] = words[i]
            k += 1
    cdef const double[::1] log_sib = np.log1p(sib_minus)
    cdef const double[::1] log_rep = np.log1p(rep_minus)
    total = pairwise(&words[0], n) if n else 0.0
    total = total if total > 1.0 else 1.0
    page_repeat = (pairwise(&repeated[0], k) if k else 0.0) / total
    step = 1.0 / (n - 1) if n > 1 else 0.0
    for i in range(n):
        X[i, 0] = 1.0
        X[i, P] = (1.0 if i == n - 1 else <double>i * step) if n > 1 else 0.0
        X[i, P + 1] = (<float>rel[i] - page_ppl) if scored[i] else 0.0
        X[i, P + 2] = ppl_rank[i]
        X[i, P + 3] = <float>in_primary / <float>n
        X[i, P + 4] = log1p(<double>n) / 8
        X[i, P + 5] = words_rank[i]
        X[i, P + 6] = words[i] / total
        X[i, P + 7] = log_sib[i]
        X[i, P + 8] = log_rep[i]
        X[i, P + 9] = rep_words[rep_ids[i]] / total
        s = rep_words[rep_ids[i]]
        X[i, P + 10] = rep_links[rep_ids[i]] / (s if s > 1.0 else 1.0)
        X[i, P + 11] = page_repeat
        X[i, P + 12] = 1.0 if page_lm else 0.0
        for j in range(WB, WIN + 4):
            X[i, j] = 0.0
        X[i, WB + _bin(words[i], word_bins)] = 1.0
        X[i, LB + _bin(<double>X[i, B + 1], link_bins)] = 1.0
        if scored[i]:
            X[i, PB + _bin(rel[i], ppl_bins)] = 1.0
        for k in range(4):
            if 0 <= i + SHIFT[k] < n:
                for j in range(4):
                    X[i, NB + 4 * k + j] = X[i + SHIFT[k], NEIGH[j]]
        lo = i - 3 if i > 3 else 0
        hi = i + 3 if i + 3 < n - 1 else n - 1
        for j in range(4):
            s = 0.0
            for k in range(lo, hi + 1):
                s += X[k, NEIGH[j]]
            X[i, WIN + j] = s / (hi - lo + 1)



def hashed_tokens(list blocks, list in_primary, dict hashes, hash_token):
    """features.hashed_tokens, compiled: the same tokens of each block, looked up in ``hashes`` (features._HASHES)
    and hashed by ``hash_token`` (features._hash, which fills it) when they are not there."""
    cdef Py_ssize_t i
    cdef list hashed = [], indices, tokens
    cdef dict seen = {}
    cdef set found
    cdef tuple ancestors, two
    cdef str tag
    for i in range(len(blocks)):
        block, kept = blocks[i], in_primary[i]
        tag, ancestors = block.tag, block.ancestors
        two = ancestors[:2]
        key = (tag, two, block.attr_tokens, kept)
        indices = seen.get(key)
        if indices is None:
            tokens = [f"tag:{tag}", f"path:{tag}/{'/'.join(two)}", f"parent:{ancestors[:1]}",
                      f"prim:{int(kept)}:tag:{tag}"]
            for a in block.attr_tokens:
                tokens.append(f"attr{a}")
            found = set()
            for token in tokens:
                value = hashes.get(token)
                found.add(value if value is not None else hash_token(token))
            indices = seen[key] = sorted(found)
        hashed.append(indices)
    return hashed


@cython.wraparound(False)
@cython.cdivision(True)
def context_rows(const double[::1] prob, X, Py_ssize_t base_start, Py_ssize_t base_stop):
    """features.context_features, computed as its numpy code computes it (np.log and np.expm1 are numpy's)."""
    cdef Py_ssize_t n = prob.shape[0], i, k, lo, hi, half, c
    cdef Py_ssize_t n_base = base_stop - base_start, n_cols = 17 + n_base
    cdef double p, share, top, total_d
    cdef float total, kept, running, divisor
    cdef const float[:, ::1] Xv = X
    out_arr = np.empty((n, n_cols))
    cdef double[:, ::1] out = out_arr
    odds_arr = np.empty(n)
    cdef double[::1] odds = odds_arr
    cdef double[::1] cumulative = np.empty(n + 1)
    for i in range(n):
        p = prob[i]
        p = 1e-6 if p < 1e-6 else (1 - 1e-6 if p > 1 - 1e-6 else p)
        odds[i] = p / (1 - p)
    cdef const double[::1] logit = np.log(odds_arr)
    kept_arr = np.expm1(X[:, 1])  # float32, as the reference computes it
    cdef float[::1] kept_words = kept_arr
    share = 0.0
    top = prob[0] if n else 0.0
    cumulative[0] = 0.0
    for i in range(n):
        if prob[i] > 0.5:
            share += 1
        else:
            kept_words[i] = kept_words[i] * 0
        if prob[i] > top:
            top = prob[i]
        cumulative[i + 1] = cumulative[i] + prob[i]
    total = 0.0 + pairwise(&kept_words[0], n) if n else 0.0
    divisor = total if total >= 1.0 else 1.0
    total_d = log1p(<double>total)
    p = (0.0 + pairwise(&prob[0], n)) / n if n else 0.0
    running = 0.0
    for i in range(n):
        out[i, 0] = prob[i]
        out[i, 1] = logit[i]
        for k in range(1, 4):
            out[i, 2 * k] = prob[i - k] if i >= k else 0.0
            out[i, 2 * k + 1] = prob[i + k] if i + k < n else 0.0
        for c, half in enumerate((3, 10)):
            lo = i - half if i > half else 0
            hi = i + half + 1 if i + half + 1 < n else n
            out[i, 8 + c] = (cumulative[hi] - cumulative[lo]) / (hi - lo)
        out[i, 10] = p
        out[i, 11] = top
        out[i, 12] = share / n
        out[i, 13] = prob[i] if i == 0 or prob[i] > out[i - 1, 13] else out[i - 1, 13]
        out[i, 15] = total_d
        running = running + kept_words[i]
        out[i, 16] = running / divisor
        for k in range(n_base):
            out[i, 17 + k] = Xv[i, base_start + k]
    for i in range(n - 1, -1, -1):
        out[i, 14] = prob[i] if i == n - 1 or prob[i] > out[i + 1, 14] else out[i + 1, 14]
    return out_arr


cdef str _joined_words(list parts):
    """``" ".join("".join(parts).split())`` without the list of words: runs of white space (as str.split
    sees it) become one space, none at either end. ASCII parts are written a byte a character."""
    cdef Py_ssize_t total = 0, length
    cdef str part
    cdef bint ascii = True
    for part in parts:
        total += len(part)
        ascii = ascii and PyUnicode_IS_ASCII(part)
    cdef void *buf = PyMem_Malloc((total + 1) * (1 if ascii else sizeof(Py_UCS4)))
    if buf == NULL:
        raise MemoryError()
    try:
        if ascii:
            length = _join_words(parts, <char *> buf)
            return PyUnicode_DecodeASCII(<char *> buf, length, NULL)
        length = _join_words(parts, <Py_UCS4 *> buf)
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, length)
    finally:
        PyMem_Free(buf)


cdef Py_ssize_t _join_words(list parts, out_char *buf):
    """:func:`_joined_words` of ``parts`` written into ``buf``; returns its length."""
    cdef Py_ssize_t length = 0
    cdef str part
    cdef Py_UCS4 c
    cdef bint pending = False
    for part in parts:
        for c in part:
            if c.isspace():
                pending = length > 0
                continue
            if pending:
                buf[length] = u' '
                length += 1
                pending = False
            buf[length] = <out_char> c
            length += 1
    return length


cdef str BREAK_LINE = "\n"


cpdef tuple break_lines(str text, bint preformatted, str br):
    """parse.break_lines: a block's collected text (``br``, parse.BREAK, where a br was) as the text the features read
    and its lines as written (when two or more)."""
    cdef list lines
    cdef str line, part
    if preformatted:
        lines = [line.rstrip() for line in text.replace(br, BREAK_LINE).split(BREAK_LINE)
                 if line and not line.isspace()]
        return _joined_words([" ".join(lines)]), (tuple(lines) if len(lines) > 1 else ())
    lines = []
    for part in text.split(br):
        line = _joined_words([part])
        if not line:
            continue
        if lines and Py_UNICODE_ISLOWER(line[0]):
            lines[-1] = <str> lines[-1] + " " + line
        else:
            lines.append(line)
    return " ".join(lines), (tuple(lines) if len(lines) > 1 else ())


cpdef tuple block_text(list parts, list spaces, bint preformatted, str br):
    """parse.block_text: a block's text from its collected ``parts`` and its lines as written, with a space before
    the parts whose indices ``spaces`` holds (``br``: parse.BREAK)."""
    cdef str text, written
    cdef tuple lines, written_lines
    cdef list spaced
    cdef Py_ssize_t start = 0, index
    text, lines = break_lines("".join(parts), preformatted, br)
    if spaces:
        spaced = []
        for index in spaces:
            spaced.extend(parts[start:index])
            spaced.append(" ")
            start = index
        spaced.extend(parts[start:])
        written, written_lines = break_lines("".join(spaced), preformatted, br)
        if written_lines or written != text:
            lines = written_lines or (written,)
    return text, lines


cdef inline unsigned long long _pack(Py_UCS4 c, unsigned long long key, Py_ssize_t position) noexcept:
    """``key`` with the lower-cased ASCII letter or digit ``c`` as its byte at ``position``."""
    cdef unsigned long long code = <unsigned long long> c
    if 65 <= code <= 90:  # A-Z
        code += 32
    return key | (code << (8 * position))


@cython.final
cdef class DepthScan:
    """extractors.nesting_depth's scan, for the tags that do not deepen the estimate (``flat_tags``:
    extractors.FLAT_TAGS, at most 64 names of at most 8 letters, each name's letters packed into one integer)."""

    cdef unsigned long long flat_keys[64]
    cdef Py_ssize_t n_flat

    def __cinit__(self, flat_tags):
        cdef Py_ssize_t index, position
        names = sorted(flat_tags)
        if len(names) > 64 or max(map(len, names), default=0) > 8:
            raise ValueError("the flat tags do not fit the compiled scan's keys (64 names of 8 letters)")
        self.n_flat = len(names)
        for index, name in enumerate(names):
            self.flat_keys[index] = 0
            for position, c in enumerate(name):
                self.flat_keys[index] = _pack(c, self.flat_keys[index], position)

    cdef inline bint _flat(self, unsigned long long key) noexcept:
        cdef Py_ssize_t j
        for j in range(self.n_flat):
            if self.flat_keys[j] == key:
                return True
        return False

    def depth(self, str html, Py_ssize_t stop_above):
        """extractors.nesting_depth: the deepest count of open tags (``<name`` up, ``</name`` down, the
        flat tags neither) in one scan for the regular expression ``<(/?)([A-Za-z][A-Za-z0-9]*)``,
        stopping once above ``stop_above``; from one ``<`` to the next with the string's own search."""
        cdef Py_ssize_t n = len(html), i = 0, start, depth = 0, deepest = 0
        cdef bint closing
        cdef Py_UCS4 c
        cdef unsigned long long key
        cdef int kind = PyUnicode_KIND(html)
        cdef void *data = PyUnicode_DATA(html)
        if html.count("<") <= stop_above:
            return 0  # cannot nest deeper than it has tags
        while True:
            i = PyUnicode_FindChar(html, u'<', i, n, 1)
            if i < 0:
                break
            i += 1
            closing = (i + 1 < n and PyUnicode_READ(kind, data, i) == u'/'
                       and is_ascii_letter(PyUnicode_READ(kind, data, i + 1)))
            if closing:
                i += 1
            if i >= n or not is_ascii_letter(PyUnicode_READ(kind, data, i)):
                continue  # no tag name: the scan goes on after the '<'
            start = i
            key = 0
            while i < n:
                c = PyUnicode_READ(kind, data, i)
                if not (is_ascii_letter(c) or (u'0' <= c <= u'9')):
                    break
                if i - start < 8:
                    key = _pack(c, key, i - start)
                i += 1
            if i - start <= 8 and self._flat(key):
                continue
            if closing:
                if depth:
                    depth -= 1
            else:
                depth += 1
                if depth > deepest:
                    deepest = depth
                    if deepest > stop_above:
                        break
        return deepest


def joined_words(str text):
    """``" ".join(text.split())``, without the list of words."""
    return _joined_words([text])


# What the parser target asks of an element's name, as bits: its membership of parse.py's tag sets (read once per
# name from the sets themselves, _TagTable.flags) and the few names it tests one by one.
cdef enum:
    TAG_INLINE = 1
    TAG_SKIP = 2
    TAG_UNSEEN = 4
    TAG_UNJOINED = 8
    TAG_PREFORMATTED = 16
    TAG_EXCLUDED = 32  # parse.EXCLUDED_TAGS
    TAG_BR = 64
    TAG_BODY = 128
    TAG_LINK = 256  # a
    TAG_META = 512
    TAG_SCRIPT = 1024


# libxml2's element names -> the name as str, its TAG_* bits and its place in parse.COUNTED_TAGS (-1: none): an open
# addressing table of the names met so far, so an event costs no decoding and no set lookups. A name longer than
# TAG_KEY - 1 bytes, or met once TAG_CACHED names are held, is decoded and looked up at every event instead.
cdef enum:
    TAG_SLOTS = 1024  # a power of two
    TAG_KEY = 32
    TAG_CACHED = 512
    MAX_COUNTED = 32  # parse.COUNTED_TAGS holds at most this many names

cdef struct _Tag:
    char key[TAG_KEY]  # the name as libxml2 gives it, NUL-terminated; empty: a free slot
    PyObject *name  # the name as str (a reference the table holds for its life)
    int flags
    int counted


@cython.final
cdef class _TagTable:
    """parse.py's tag sets, and the table of the element names met so far with their TAG_* bits."""

    cdef frozenset inline, skip, unseen, unjoined, preformatted, excluded
    cdef tuple counted  # parse.COUNTED_TAGS (their str objects hold the UTF-8 of counted_names)
    cdef const char *counted_names[MAX_COUNTED]
    cdef Py_ssize_t n_counted, held
    cdef _Tag slots[TAG_SLOTS]
    cdef _Tag uncached  # the answer for a name the table does not hold (valid until the next lookup)

    def __cinit__(self, frozenset inline, frozenset skip, frozenset unseen, frozenset unjoined, frozenset preformatted,
                  frozenset excluded, tuple counted):
        cdef Py_ssize_t k
        memset(self.slots, 0, sizeof(self.slots))
        memset(&self.uncached, 0, sizeof(self.uncached))
        if len(counted) > MAX_COUNTED:
            raise ValueError("%d counted tags, the compiled parser counts at most %d" % (len(counted), MAX_COUNTED))
        self.inline, self.skip, self.unseen, self.unjoined = inline, skip, unseen, unjoined
        self.preformatted, self.excluded, self.counted = preformatted, excluded, counted
        self.n_counted = len(counted)
        for k in range(self.n_counted):
            self.counted_names[k] = <const char *> PyUnicode_AsUTF8(counted[k])

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(TAG_SLOTS):
            Py_XDECREF(self.slots[i].name)
        Py_XDECREF(self.uncached.name)

    cdef int flags(self, str tag) except -1:
        """The TAG_* bits of the element name ``tag``."""
        return ((TAG_INLINE if tag in self.inline else 0) | (TAG_SKIP if tag in self.skip else 0)
                | (TAG_UNSEEN if tag in self.unseen else 0) | (TAG_UNJOINED if tag in self.unjoined else 0)
                | (TAG_PREFORMATTED if tag in self.preformatted else 0)
                | (TAG_EXCLUDED if tag in self.excluded else 0)
                | (TAG_BR if tag == "br" else 0) | (TAG_BODY if tag == "body" else 0)
                | (TAG_LINK if tag == "a" else 0) | (TAG_META if tag == "meta" else 0)
                | (TAG_SCRIPT if tag == "script" else 0))

    cdef int _fill(self, _Tag *slot, const char *name, Py_ssize_t length) except -1:
        """``slot``'s name (a new reference, the old one released), bits and counted index for ``name``."""
        cdef str tag = PyUnicode_DecodeUTF8(name, length, NULL)
        cdef Py_ssize_t k
        Py_INCREF(tag)
        Py_XDECREF(slot.name)
        slot.name = <PyObject *> tag
        slot.flags = self.flags(tag)
        slot.counted = -1
        for k in range(self.n_counted):
            if strcmp(name, self.counted_names[k]) == 0:
                slot.counted = k
                break
        return 0

    cdef _Tag *entry(self, const char *name) except NULL:
        """The table's entry for the element name ``name``, made on first sight."""
        cdef Py_ssize_t length = strlen(name)
        cdef unsigned int h = 2166136261u
        cdef Py_ssize_t k, i
        cdef _Tag *slot
        if 0 < length < TAG_KEY:
            for k in range(length):  # FNV-1a
                h = (h ^ <unsigned char> name[k]) * 16777619u
            i = h & (TAG_SLOTS - 1)
            while True:
                slot = &self.slots[i]
                if slot.key[0] == 0:
                    break
                if strcmp(slot.key, name) == 0:
                    return slot
                i = (i + 1) & (TAG_SLOTS - 1)
            if self.held < TAG_CACHED:
                self._fill(slot, name, length)
                memcpy(slot.key, name, length + 1)
                self.held += 1
                return slot
        self._fill(&self.uncached, name, length)
        return &self.uncached


cdef class _Owner:
    """parse._Owner: a block-level element on the parser's stack, collecting its runs of text, and its text lengths
    for the structure heuristics (parse.Nodes)."""

    cdef public Py_ssize_t element, depth, parent, link
    cdef public bint excluded, preformatted, comment
    # parse._Owner's own_text, children, bearing, longest, second, total, squares and longest_choice (first, last)
    cdef Py_ssize_t own_text, children, bearing, longest, second, choice_first, choice_last
    cdef double total, squares
    cdef public bint breaks  # a br among its parts (parse.BREAK), or a line break when preformatted
    cdef public int separator  # parse.SKIPPED or parse.JUNCTION after its last part (parse.separates decides), or 0
    cdef public list spaces  # the parts a written space goes before (parse.block_text), or None
    cdef public str tag
    cdef public tuple ancestors
    cdef tuple levels  # the _ClassId of the element and of its three nearest block-level ancestors (None: no tokens)
    cdef public list parts
    cdef tuple _attrs

    cdef tuple attrs(self):
        """parse._Owner.attrs: the class/id tokens of the element and its ancestors, prefixed by level (computed
        once)."""
        cdef Py_ssize_t level
        cdef object entry
        cdef list joined
        if self._attrs is None:
            joined = []
            for level, entry in enumerate(self.levels):
                if entry is not None:
                    joined.extend((<_ClassId> entry).prefixed(level))
            self._attrs = tuple(joined)
        return self._attrs


cdef tuple LEVEL_PREFIXES = ("0:", "1:", "2:", "3:")  # parse._Owner.attrs' prefixes, by level


cdef class _ClassId:
    """An element's class and id value: its tokens (parse.class_id_tokens) and, made on first use, the tokens
    prefixed by each level as _Owner.attrs writes them ("2:menu")."""

    cdef tuple tokens
    cdef list by_level
    cdef bint comment  # parse.names_comments of its tokens

    cdef tuple prefixed(self, Py_ssize_t level):
        cdef str prefix
        cdef tuple out = <tuple> self.by_level[level]
        if out is None:
            prefix = LEVEL_PREFIXES[level]
            out = self.by_level[level] = tuple([prefix + t for t in self.tokens])
        return out


cdef tuple _ascii_class_id_tokens(str class_id):
    """parse.class_id_tokens of an ASCII value: its runs of letters of two or more, lower-cased."""
    cdef const char *data = <const char *> PyUnicode_DATA(class_id)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(class_id), i = 0, start
    cdef list tokens = []
    while i < n:
        if not is_ascii_letter(data[i]):
            i += 1
            continue
        start = i
        while i < n and is_ascii_letter(data[i]):
            i += 1
        if i - start > 1:
            tokens.append(PyUnicode_DecodeASCII(data + start, i - start, NULL).lower())
    return tuple(tokens)


cdef _Owner _owner(Py_ssize_t element, str tag, tuple ancestors, tuple levels, Py_ssize_t depth, Py_ssize_t parent,
                   bint excluded, bint preformatted, bint comment):
    """A new _Owner (without the Python call of a constructor)."""
    cdef _Owner owner = _Owner.__new__(_Owner)
    owner.element, owner.tag, owner.ancestors, owner.levels, owner.depth = element, tag, ancestors, levels, depth
    owner.parent, owner.excluded, owner.preformatted, owner.comment = parent, excluded, preformatted, comment
    owner.parts = []
    owner.link = 0
    owner.breaks = False
    owner.separator = 0
    owner.spaces = None
    owner.own_text = owner.children = owner.bearing = owner.longest = owner.second = 0
    owner.choice_first = owner.choice_last = -1
    owner.total = owner.squares = 0.0
    return owner


cdef inline bint _article_descends(Py_ssize_t count, double total, double squares, Py_ssize_t longest,
                                   Py_ssize_t second):
    """parse.article_descends, in the same floating-point operations."""
    cdef double gap
    if count == 0 or longest <= 0:
        return False
    if count == 1:
        return True
    gap = <double> (longest - second)
    return gap * gap * count * (count - 1) >= count * squares - total * total


@cython.final
cdef class _Group:
    """One group of parse._BlockTarget.groups (depth, tag, class/id words): its occurrences, text length and the
    preorder ranges of its elements."""

    cdef Py_ssize_t count, length
    cdef list ranges


@cython.final
cdef class BlockTarget:
    """parse._BlockTarget, compiled: the HTML parser's events -> blocks (``block_class`` objects). Its stack
    is three lists (tag, the owner the element opened or None, inside a link) instead of tuples."""

    cdef public list blocks, owners, tags, opened, links
    cdef public Py_ssize_t element, skip
    cdef public object markup  # a parse.Markup, complete after close()
    cdef public bint in_json_ld, junction  # junction: an inline element has just ended (nothing since)
    cdef Py_ssize_t https_links, http_links, data_attributes, aria_attributes  # counted from libxml2's arrays
    cdef Py_ssize_t tag_counts[MAX_COUNTED]  # parse.COUNTED_TAGS' start tags, counted from libxml2's names
    cdef _TagTable table
    cdef object block_class, class_id_tokens, excluded_part, markup_class, read_markup, settle_separator
    cdef object names_comments, list_choice
    # the structure heuristics so far (parse._BlockTarget's most_bearing ... groups); the candidates' ranges
    cdef Py_ssize_t most_bearing, most_children_depth, leaf_text, leaf_parent, leaf_parent_depth, deepest
    cdef Py_ssize_t most_first, most_last, leaf_first, leaf_last, article_first, article_last
    cdef dict groups
    cdef public bint nodes  # parse._BlockTarget.nodes: compute the structure heuristics' candidates
    cdef str br
    cdef int skipped_mark, junction_mark
    # Class and id values (joined as parse.attr_tokens joins them) -> their _ClassId, or None when they have no tokens:
    # a page's elements, and a site's pages, repeat the same few. At most cache_size are held, as in parse.ATTR_TOKENS.
    cdef dict class_ids
    cdef Py_ssize_t cache_size
    cdef object error  # raised inside a libxml2 callback (parse_html)

    def __init__(self, block_class, markup_class, read_markup, class_id_tokens, excluded_part, settle_separator,
                 names_comments, list_choice, *, frozenset inline, frozenset skip, frozenset unseen, frozenset unjoined,
                 frozenset preformatted, frozenset excluded, tuple counted, str br, int skipped, int junction,
                 Py_ssize_t cache_size):
        """parse.py's types, functions and rules (parse.compiled_target hands them in): ``block_class`` and
        ``markup_class``, parse.Block and parse.Markup; ``read_markup``, parse.read_markup for lxml's attribute
        mappings (libxml2's arrays are read here, :meth:`_read_attributes`); ``class_id_tokens``,
        parse.class_id_tokens, asked about class and id values that are not ASCII and not cached; ``excluded_part``,
        parse.excluded_part, asked only about an element that could be one (of ``excluded``, or with a role or
        aria-modal attribute); ``settle_separator``, parse.settle_separator, asked only where a skipped element
        (``skipped``) or a junction of inline elements (``junction``) stood; ``names_comments``, parse.names_comments,
        asked once per class and id value; ``list_choice``, parse.list_choice, once per page. The tag sets are
        parse.INLINE, SKIP, UNSEEN, UNJOINED, PREFORMATTED, EXCLUDED_TAGS and COUNTED_TAGS; ``br`` is parse.BREAK."""
        self.names_comments, self.list_choice = names_comments, list_choice
        self.block_class, self.markup_class, self.read_markup = block_class, markup_class, read_markup
        self.class_id_tokens, self.excluded_part, self.settle_separator = class_id_tokens, excluded_part, settle_separator
        self.table = _TagTable(inline, skip, unseen, unjoined, preformatted, excluded, counted)
        self.br, self.skipped_mark, self.junction_mark = br, skipped, junction
        self.class_ids, self.cache_size = {}, cache_size
        self.nodes = False
        self.reset()

    def reset(self):
        """Start a new document (parse.parse_blocks reuses its parser and target)."""
        self.blocks, self.owners, self.tags, self.opened, self.links = [], [], [], [], []
        self.element = -1
        self.skip = 0
        self.markup = self.markup_class()
        self.in_json_ld = self.junction = False
        self.https_links = self.http_links = self.data_attributes = self.aria_attributes = 0
        memset(self.tag_counts, 0, sizeof(self.tag_counts))
        self.most_bearing = self.most_children_depth = self.leaf_text = self.leaf_parent_depth = self.deepest = 0
        self.leaf_parent = -1
        self.most_first = self.most_last = self.leaf_first = self.leaf_last = -1
        self.article_first = self.article_last = -1
        self.groups = {}

    cdef _flush(self, _Owner owner):
        cdef str text
        cdef tuple lines = ()
        cdef Py_ssize_t link
        if owner.parts:
            if owner.breaks or owner.spaces is not None:
                text, lines = block_text(owner.parts, owner.spaces, owner.preformatted, self.br)
            else:
                text = _joined_words(owner.parts)
            if text:
                link = owner.link if owner.link < len(text) else len(text)
                self.blocks.append(self.block_class(text, owner.element, owner.tag, owner.ancestors, owner.attrs(),
                                                    link, owner.depth, owner.parent, owner.excluded, lines,
                                                    owner.preformatted, owner.comment))
                owner.own_text += len(text)
            owner.parts = []
            owner.link = 0
            owner.breaks = False
            owner.spaces = None
        owner.separator = 0

    cdef _push(self, str tag, object owner, bint in_link):
        self.tags.append(tag)
        self.opened.append(owner)
        self.links.append(in_link)

    def start(self, tag, attrib):
        self._start(tag, self.table.flags(tag), NULL, attrib)

    cdef _start(self, str tag, int flags, const xmlChar **atts, object attrib):
        """An element ``tag`` (its TAG_* bits ``flags``) opens. Its class, id, role and aria-modal come from
        ``attrib`` (lxml's mapping) or, when that is None, from libxml2's attribute array ``atts`` (read only for a
        block-level element)."""
        cdef _Owner owner, child
        cdef bint in_link, junction = self.junction
        cdef tuple ancestors
        self.junction = False
        self.element += 1
        if attrib is not None:
            if tag in self.markup.tags:
                self.markup.tags[tag] += 1
            self.in_json_ld = self.read_markup(self.markup, tag, attrib) if attrib else False
        else:
            self.in_json_ld = self._read_attributes(flags, atts)
        if self.skip:
            self.skip += 1
            return
        if flags & TAG_SKIP:
            self.skip = 1
            if not flags & TAG_UNSEEN and self.owners:
                owner = self.owners[-1]
                if owner.parts and not owner.preformatted:
                    owner.separator = self.skipped_mark
            return
        in_link = bool(self.links) and self.links[-1]
        if not self.owners:
            if flags & TAG_BODY:
                owner = _owner(self.element, tag, (), (), 0, -1, False, False, False)
                self.owners.append(owner)
                self._push(tag, owner, False)
            else:
                self._push(tag, None, False)
            return
        owner = self.owners[-1]
        if flags & TAG_INLINE:
            if (junction and not flags & TAG_UNJOINED and owner.parts and not owner.separator
                    and not owner.preformatted):
                owner.separator = self.junction_mark
            self._push(tag, None, in_link or flags & TAG_LINK)
        elif flags & TAG_BR:
            owner.parts.append(self.br)
            owner.breaks = True
            self._push(tag, None, in_link)
        else:
            self._flush(owner)
            ancestors = owner.ancestors
            if attrib is not None:
                class_id = (self._class_id(f"{attrib.get('class') or ''} {attrib.get('id') or ''}") if attrib
                            else None)  # parse.attr_tokens' key
                role, modal = attrib.get("role"), attrib.get("aria-modal")
            else:
                class_id, role, modal = self._block_attributes(atts)
            child = _owner(self.element, tag, (owner.tag,) + (ancestors if len(ancestors) < 4 else ancestors[:3]),
                           (class_id,) + owner.levels[:3], owner.depth + 1, owner.element,
                           owner.excluded or self._excluded(tag, flags, role, modal),
                           owner.preformatted or flags & TAG_PREFORMATTED,
                           owner.comment or (class_id is not None and (<_ClassId> class_id).comment))
            self.owners.append(child)
            self._push(tag, child, False)

    cdef bint _read_attributes(self, int flags, const xmlChar **atts) except -1:
        """parse.read_markup of libxml2's attribute array ``atts`` (name, value, ..., NULL; a value may be NULL,
        as lxml's ``''``): the counts in C, the rare values (og:type, itemtype) as str; True when the element opens
        a JSON-LD script."""
        cdef const char *name
        cdef const char *value
        cdef const char *meta_name = NULL
        cdef const char *meta_property = NULL
        cdef const char *meta_content = NULL
        cdef const char *script_type = NULL
        cdef bint meta = flags & TAG_META, script = flags & TAG_SCRIPT
        if atts == NULL:
            return False
        while atts[0] != NULL:
            name, value = <const char *> atts[0], <const char *> atts[1]
            if name[0] == b'd' and strncmp(name, "data-", 5) == 0:
                self.data_attributes += 1
            elif name[0] == b'a' and strncmp(name, "aria-", 5) == 0:
                self.aria_attributes += 1
            elif name[0] == b'h' and strcmp(name, "href") == 0:
                if value != NULL and strncmp(value, "https:", 6) == 0:
                    self.https_links += 1
                elif value != NULL and strncmp(value, "http:", 5) == 0:
                    self.http_links += 1
            elif name[0] == b'i' and strcmp(name, "itemtype") == 0:
                self.markup.itemtypes.append(_value(value))
            elif meta and strcmp(name, "name") == 0:
                meta_name = value
            elif meta and strcmp(name, "property") == 0:
                meta_property = value
            elif meta and strcmp(name, "content") == 0:
                meta_content = value
            elif script and strcmp(name, "type") == 0:
                script_type = value
            atts += 2
        if meta:
            if meta_name != NULL and strcasecmp(meta_name, "viewport") == 0:
                self.markup.viewport = True
            if meta_property != NULL and strcmp(meta_property, "og:type") == 0:
                self.markup.og_types.append(_value(meta_content))
        elif script and script_type != NULL and strcasecmp(script_type, "application/ld+json") == 0:
            self.markup.json_ld.append("")
            return True
        return False

    cdef object _class_id(self, str class_id):
        """The _ClassId of a class and id value (None: no tokens), from ``class_ids`` when there; an ASCII value is
        tokenized here, another by ``class_id_tokens`` (parse.class_id_tokens)."""
        cdef object known = self.class_ids.get(class_id, False)
        cdef tuple tokens
        cdef _ClassId entry = None
        if known is not False:
            return known
        tokens = (_ascii_class_id_tokens(class_id) if PyUnicode_IS_ASCII(class_id)
                  else <tuple> self.class_id_tokens(class_id))
        if tokens:
            entry = _ClassId.__new__(_ClassId)
            entry.tokens, entry.by_level = tokens, [None, None, None, None]
            entry.comment = self.names_comments(tokens)
        if len(self.class_ids) >= self.cache_size:
            self.class_ids.clear()
        self.class_ids[class_id] = entry
        return entry

    cdef tuple _block_attributes(self, const xmlChar **atts):
        """A block-level element's class and id (its _ClassId, or None: no tokens; parse.attr_tokens), role and
        aria-modal (None: absent) from libxml2's attribute array (name, value, ..., NULL; a later duplicate wins, no
        value is lxml's ``''``)."""
        cdef const char *name
        cdef const char *class_value = NULL
        cdef const char *id_value = NULL
        cdef bint class_or_id = False
        cdef object role = None, modal = None
        if atts != NULL:
            while atts[0] != NULL:
                name = <const char *> atts[0]
                if strcmp(name, "class") == 0:
                    class_value, class_or_id = <const char *> atts[1], True
                elif strcmp(name, "id") == 0:
                    id_value, class_or_id = <const char *> atts[1], True
                elif strcmp(name, "role") == 0:
                    role = _value(<const char *> atts[1])
                elif strcmp(name, "aria-modal") == 0:
                    modal = _value(<const char *> atts[1])
                atts += 2
        # parse.attr_tokens' key, joined here as it joins it (the parity tests pin the two)
        return (self._class_id(_joined_value(class_value, id_value)) if class_or_id else None, role, modal)

    cdef bint _excluded(self, str tag, int flags, object role, object modal) except -1:
        """parse.excluded_part of a block-level element with this role and aria-modal (None: absent), asked only
        about an element of parse.EXCLUDED_TAGS or one with a role or aria-modal attribute."""
        if role is None and modal is None and not flags & TAG_EXCLUDED:
            return False
        return self.excluded_part(tag, self.tags, role, modal)

    def end(self, tag):
        self._end(tag, self.table.flags(tag))

    cdef _end(self, str tag, int flags):
        cdef list tags = self.tags
        cdef object opened
        cdef str name
        self.in_json_ld = False
        if self.skip:
            self.skip -= 1
            return
        if not tags:
            return
        if tags[-1] != tag and tag not in tags:
            return  # an end tag the parser never opened
        while tags:
            name = tags.pop()
            opened = self.opened.pop()
            self.links.pop()
            if opened is not None:
                self._flush(<_Owner> opened)
                self.owners.pop()
                if self.nodes:
                    self._closed(<_Owner> opened)
            if name == tag:
                break
        self.junction = flags & TAG_INLINE and not flags & TAG_UNJOINED  # parse._BlockTarget.end

    def data(self, text):
        self._data(text)

    cdef _data(self, str text):
        cdef _Owner owner
        self.junction = False
        if self.in_json_ld:
            self.markup.json_ld[-1] += text
        if self.skip or not self.owners:
            return
        owner = self.owners[-1]
        if owner.separator:
            self.settle_separator(owner, text)
        owner.parts.append(text)
        if owner.preformatted and not owner.breaks and "\n" in text:
            owner.breaks = True
        if self.links[-1]:
            owner.link += len(text)

    cdef _closed(self, _Owner owner):
        """parse._BlockTarget._closed: an element's end, its place in the structure heuristics, its text length handed
        to its parent."""
        cdef Py_ssize_t last = self.element, text = owner.own_text + <Py_ssize_t> owner.total
        cdef Py_ssize_t first = owner.element, choice_first = owner.element, choice_last = last
        cdef _Owner parent = <_Owner> self.owners[-1] if self.owners else None
        cdef _Owner holder
        cdef _Group group
        cdef object level = owner.levels[0] if owner.levels else None
        cdef tuple key
        if owner.bearing > self.most_bearing:
            self.most_bearing, self.most_children_depth = owner.bearing, owner.depth
            self.most_first, self.most_last = first, last
        if owner.bearing == 0 and text > self.leaf_text:
            self.leaf_text = text
            holder = owner if parent is None else parent
            self.leaf_parent, self.leaf_parent_depth = holder.element, holder.depth
        if first == self.leaf_parent:
            self.leaf_first, self.leaf_last = first, last
        if _article_descends(owner.children, owner.total, owner.squares, owner.longest, owner.second):
            choice_first, choice_last = owner.choice_first, owner.choice_last
        if owner.depth > self.deepest:
            self.deepest = owner.depth
        key = (owner.depth, owner.tag, (<_ClassId> level).tokens if level is not None else ())
        group = self.groups.get(key)
        if group is None:
            group = _Group.__new__(_Group)
            group.count, group.length, group.ranges = 0, 0, []
            self.groups[key] = group
        group.count += 1
        group.length += text
        group.ranges.append((first, last))
        if parent is None:
            self.article_first, self.article_last = choice_first, choice_last
            return
        parent.children += 1
        parent.total += text
        parent.squares += (<double> text) * text
        if text > 0:
            parent.bearing += 1
        if text > parent.longest:
            parent.second, parent.longest = parent.longest, text
            parent.choice_first, parent.choice_last = choice_first, choice_last
        elif text > parent.second:
            parent.second = text

    cdef _nodes(self, nodes):
        """parse._BlockTarget.close's candidates of the structure heuristics, into ``nodes`` (parse.Nodes)."""
        cdef double middle
        cdef _Group group
        most, leaf = (self.most_first, self.most_last), (self.leaf_first, self.leaf_last)
        nodes.most_children, nodes.leaf_parent = most, leaf
        nodes.article = (self.article_first, self.article_last)
        if self.most_first != -1 and self.leaf_first != -1:  # parse._BlockTarget.close
            middle = self.deepest / 2.0
            nodes.middle = most if (abs(self.most_children_depth - middle) <= abs(self.leaf_parent_depth - middle)) else leaf
        else:
            nodes.middle = most if self.most_first != -1 else leaf
        nodes.list_items = self.list_choice([(group.count, group.length, group.ranges)
                                             for group in self.groups.values()])

    def close(self):
        cdef _Owner owner
        while self.owners:
            owner = <_Owner> self.owners.pop()
            self._flush(owner)
            if self.nodes:
                self._closed(owner)
        markup = self.markup
        if self.nodes:
            self._nodes(markup.nodes)
        markup.elements = self.element + 1
        markup.https_links += self.https_links
        markup.http_links += self.http_links
        markup.data_attributes += self.data_attributes
        markup.aria_attributes += self.aria_attributes
        for k in range(self.table.n_counted):
            markup.tags[self.table.counted[k]] += self.tag_counts[k]
        return self.blocks


# parse_html: libxml2's functions, looked up once (not found: parse.py reads lxml's target events instead).
ctypedef void (*_init_sax_f)(xmlSAXHandler *handler) noexcept
ctypedef void *(*_new_context_f)(const xmlSAXHandler *sax, void *user_data) noexcept
ctypedef void *(*_read_memory_f)(void *context, const char *buffer, int size, const char *url, const char *encoding,
                                 int options) noexcept
ctypedef void (*_free_f)(void *pointer) noexcept

cdef struct _LibXml2:
    _new_context_f new_context
    _read_memory_f read_memory
    _free_f free_context
    _free_f free_doc
    _free_f stop_parser
    xmlSAXHandler sax

cdef _LibXml2 _libxml2
cdef object _libxml2_found = None

# lxml.etree.HTMLParser's options (recover, no network, compact; a default doctype), as parse._html_parser makes it.
cdef int _HTML_OPTIONS = HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_COMPACT


cdef bint _find_libxml2() except -1:
    """Look up libxml2 in lxml's etree module, once; False when a function is missing."""
    global _libxml2_found
    if _libxml2_found is not None:
        return _libxml2_found
    from lxml import etree

    cdef void *handle = dlopen(etree.__file__.encode(), RTLD_NOW | RTLD_NOLOAD)
    cdef void *init_sax = NULL
    _libxml2_found = False
    if handle == NULL:
        return False
    init_sax = dlsym(handle, "xmlSAX2InitHtmlDefaultSAXHandler")
    _libxml2.new_context = <_new_context_f> dlsym(handle, "htmlNewSAXParserCtxt")
    _libxml2.read_memory = <_read_memory_f> dlsym(handle, "htmlCtxtReadMemory")
    _libxml2.free_context = <_free_f> dlsym(handle, "htmlFreeParserCtxt")
    _libxml2.free_doc = <_free_f> dlsym(handle, "xmlFreeDoc")
    _libxml2.stop_parser = <_free_f> dlsym(handle, "xmlStopParser")
    if (init_sax == NULL or _libxml2.new_context == NULL or _libxml2.read_memory == NULL
            or _libxml2.free_context == NULL or _libxml2.free_doc == NULL or _libxml2.stop_parser == NULL):
        return False
    # lxml's parser target setup (lxml's saxparser.pxi, _connectTarget, for a target with start, end and data):
    # the HTML defaults, with element, text and CDATA events to the target and no comments or PIs.
    (<_init_sax_f> init_sax)(&_libxml2.sax)
    _libxml2.sax.initialized = XML_SAX2_MAGIC
    _libxml2.sax.startElementNs = NULL
    _libxml2.sax.endElementNs = NULL
    _libxml2.sax._private = NULL
    _libxml2.sax.startElement = _sax_start
    _libxml2.sax.endElement = _sax_end
    _libxml2.sax.characters = _sax_data
    _libxml2.sax.cdataBlock = _sax_data
    _libxml2.sax.processingInstruction = NULL
    _libxml2.sax.comment = NULL
    _libxml2.sax.reference = NULL
    _libxml2.sax.serror = <xmlStructuredErrorFunc> _sax_error  # reported errors are dropped, as lxml collects and ignores them in recover mode
    _libxml2_found = True
    return True


def sax_available():
    """True when :func:`parse_html` can run (libxml2's functions were found in lxml's etree module)."""
    return _find_libxml2()


cdef inline str _value(const char *value):
    """An attribute's value as lxml's mapping holds it (no value: ``''``)."""
    return "" if value == NULL else PyUnicode_DecodeUTF8(value, strlen(value), NULL)


cdef str _joined_value(const char *first, const char *second):
    """``_value(first) + " " + _value(second)``, decoded once."""
    cdef Py_ssize_t a = 0 if first == NULL else strlen(first), b = 0 if second == NULL else strlen(second)
    cdef char buffer[256]
    cdef char *joined = buffer
    if a + b + 1 > 256:
        joined = <char *> PyMem_Malloc(a + b + 1)
    if joined == NULL:
        raise MemoryError()
    try:
        if a:
            memcpy(joined, first, a)
        joined[a] = b' '
        if b:
            memcpy(joined + a + 1, second, b)
        return PyUnicode_DecodeUTF8(joined, a + b + 1, NULL)
    finally:
        if joined != buffer:
            PyMem_Free(joined)


cdef void _sax_error(void *user_data, const void *error) noexcept:
    pass


cdef void _stop(BlockTarget target, object error, void *context) noexcept:
    """A callback raised ``error``: keep it for parse_html to raise, and stop the parser."""
    target.error = error
    _libxml2.stop_parser(context)


cdef void _sax_start(void *context, const xmlChar *name, const xmlChar **atts) noexcept:
    cdef BlockTarget target = <BlockTarget> warcplex_sax_target
    cdef _Tag *tag
    if target.error is not None:
        return
    try:
        tag = target.table.entry(<const char *> name)
        if tag.counted >= 0:
            target.tag_counts[tag.counted] += 1
        target._start(<str> tag.name, tag.flags, atts, None)
    except BaseException as exc:
        _stop(target, exc, context)


cdef void _sax_end(void *context, const xmlChar *name) noexcept:
    cdef BlockTarget target = <BlockTarget> warcplex_sax_target
    cdef _Tag *tag
    if target.error is not None:
        return
    try:
        tag = target.table.entry(<const char *> name)
        target._end(<str> tag.name, tag.flags)
    except BaseException as exc:
        _stop(target, exc, context)


cdef void _sax_data(void *context, const xmlChar *text, int length) noexcept:
    cdef BlockTarget target = <BlockTarget> warcplex_sax_target
    if target.error is not None:
        return
    try:
        target._data(PyUnicode_DecodeUTF8(<const char *> text, length, NULL))
    except BaseException as exc:
        _stop(target, exc, context)


def parse_html(bytes html not None, BlockTarget target):
    """``target``'s blocks of UTF-8 ``html``, read by libxml2's HTML parser with our own SAX callbacks: the
    events lxml's ``fromstring(html, HTMLParser(target=target, encoding="utf-8"))`` delivers, without lxml's
    Python calls, attribute dicts and tag strings per event. Needs :func:`sax_available`."""
    global warcplex_sax_target
    cdef void *context
    cdef void *doc
    cdef void *outer = warcplex_sax_target
    if not _find_libxml2():
        raise RuntimeError("libxml2 not found in lxml.etree")
    context = _libxml2.new_context(&_libxml2.sax, NULL)
    if context == NULL:
        raise MemoryError()
    target.reset()
    target.error = None
    warcplex_sax_target = <void *> target
    try:
        doc = _libxml2.read_memory(context, <const char *> html, len(html), NULL, "utf-8", _HTML_OPTIONS)
        if doc != NULL:
            _libxml2.free_doc(doc)
    finally:
        warcplex_sax_target = outer
        _libxml2.free_context(context)
    if target.error is not None:
        error, target.error = target.error, None
        raise error
    return target.close()

