# cython: language_level=3
"""Compiled block stage: the parser target of :mod:`~pipeline.steps.blocks.parse` (fed by libxml2's HTML parser
through our own callbacks, :func:`parse_html`, where lxml's module exposes it), the page's feature
matrix and the second stage's context features of :mod:`~pipeline.steps.blocks.features`, and the
linear part and tree ensembles of :mod:`~pipeline.steps.blocks.model`, and the perplexity filter's
pooling (:class:`~pipeline.steps.perplexity.Judgement`), and the corpus stages' normalisation
(:class:`Normalizer`, :mod:`pipeline.corpus.normalize`), computing exactly what their
Python reference code computes, bit for bit (``tests/test_blocks_native.py`` pins it, and
``tests/test_shared_work.py`` the pooling): the same
float32/float64 roundings in the same order, numpy's pairwise summation, numpy's own transcendental
functions (called once per page on whole arrays). Loaded by :mod:`pipeline.steps.blocks.native`,
which falls back to the Python code when it is missing.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.unicode cimport PyUnicode_4BYTE_KIND, PyUnicode_Find, PyUnicode_FromKindAndData
from libc.math cimport log1p, log10, pow
from libc.stdlib cimport free, malloc, qsort
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
from libc.string cimport memcpy, memset

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

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_FindChar(object text, Py_UCS4 ch, Py_ssize_t start, Py_ssize_t end, int direction) except -2
    int PyUnicode_KIND(object text)
    void *PyUnicode_DATA(object text)
    Py_UCS4 PyUnicode_READ(int kind, void *data, Py_ssize_t index) noexcept
    bint PyUnicode_IS_ASCII(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    bint Py_UNICODE_ISSPACE(Py_UCS4 c) noexcept
    bint Py_UNICODE_ISLOWER(Py_UCS4 c) noexcept
    object PyUnicode_DecodeASCII(const char *data, Py_ssize_t size, const char *errors)

cdef extern from "dlfcn.h":
    void *dlopen(const char *filename, int flags)
    void *dlsym(void *handle, const char *symbol)
    int RTLD_NOW, RTLD_NOLOAD

cdef extern from *:
    """
    static __thread void *warcplex_sax_target = NULL;  /* the BlockTarget of the parse running on this thread */
    """
    void *warcplex_sax_target

from cpython.unicode cimport PyUnicode_AsUTF8, PyUnicode_DecodeUTF8
from libc.string cimport strcmp, strlen, strncmp

cdef extern from "strings.h":
    int strcasecmp(const char *a, const char *b) nogil

import unicodedata

import numpy as np

# Bumped whenever what this module computes, or how parse.py calls it, changes; native.py refuses a module of
# another version.
VERSION = 17

# The tag sets and characters this module tests against are the Python code's own, read once at import, so
# each rule lives in one place. parse.COUNTED_TAGS: the elements whose start tags Markup.tags counts (by
# libxml2's names, _COUNTED_NAMES).
from pipeline.steps.blocks import features as _features, parse as _parse

cdef enum:
    N_COUNTED = 15
cdef tuple COUNTED_TAGS = _parse.COUNTED_TAGS
if len(COUNTED_TAGS) != N_COUNTED:
    raise ImportError("parse.COUNTED_TAGS has %d tags, the compiled module counts %d" % (len(COUNTED_TAGS), N_COUNTED))
cdef const char *_COUNTED_NAMES[N_COUNTED]
for _k, _tag in enumerate(COUNTED_TAGS):
    _COUNTED_NAMES[_k] = <const char *> PyUnicode_AsUTF8(_tag)

cdef frozenset INLINE = _parse.INLINE
cdef frozenset SKIP = _parse.SKIP
cdef frozenset UNSEEN = _parse.UNSEEN
cdef object _settle_separator = _parse.settle_separator  # asked only where a SKIPPED element or a JUNCTION stood
cdef int SKIPPED = _parse.SKIPPED, JUNCTION = _parse.JUNCTION
cdef frozenset UNJOINED = _parse.UNJOINED
cdef str BREAK = _parse.BREAK  # a br in a block's parts
cdef frozenset PREFORMATTED = _parse.PREFORMATTED
cdef frozenset HEADINGS = _features.HEADINGS
cdef frozenset LIST_ITEMS = _features.LIST_ITEMS
cdef frozenset CELLS = _features.CELLS
cdef frozenset CODE = _features.CODE
cdef str ENDS_SENTENCE = _features.ENDS_SENTENCE


cdef inline bint _unspaced(Py_UCS4 c) noexcept:
    """A character of a script written without spaces (parse.UNSPACED)."""
    return ((0x3040 <= c <= 0x30ff) or (0x3400 <= c <= 0x4dbf) or (0x4e00 <= c <= 0x9fff)
            or (0xf900 <= c <= 0xfaff) or (0x0e00 <= c <= 0x0eff) or (0x1000 <= c <= 0x109f)
            or (0x1780 <= c <= 0x17ff))


# str's character classes, with the ASCII answers inline (Python's own tables answer the rest).
cdef inline bint _isalpha(Py_UCS4 c) noexcept:
    return (u'a' <= c <= u'z') or (u'A' <= c <= u'Z') if c < 128 else c.isalpha()


cdef inline bint _isupper(Py_UCS4 c) noexcept:
    return u'A' <= c <= u'Z' if c < 128 else c.isupper()


cdef inline bint _isdecimal(Py_UCS4 c) noexcept:
    return u'0' <= c <= u'9' if c < 128 else c.isdecimal()


cdef inline bint _isalnum(Py_UCS4 c) noexcept:
    return (u'a' <= c <= u'z') or (u'A' <= c <= u'Z') or (u'0' <= c <= u'9') if c < 128 else c.isalnum()


cdef inline bint _lm_cjk(Py_UCS4 c) noexcept:
    """A character that is one LM token by itself (normalize._CJK)."""
    return ((0x3040 <= c <= 0x30ff) or (0x3400 <= c <= 0x4dbf) or (0x4e00 <= c <= 0x9fff)
            or (0xf900 <= c <= 0xfaff) or (0xac00 <= c <= 0xd7af))


cdef object _nfkc = unicodedata.normalize

ctypedef fused out_char:  # what the compiled text functions write: an ASCII text a byte a character, others UCS4
    char
    Py_UCS4


def lm_line(str text):
    """normalize.normalize_for_lm and the token count: NFKC, lower-cased, decimal digits to 0, then
    a token per CJK character, per run of other word characters and per other non-space character.
    An ASCII text (which NFKC leaves as it is) is written a byte a character."""
    cdef bint ascii = PyUnicode_IS_ASCII(text)
    cdef str norm = text if ascii else _nfkc("NFKC", text).lower()  # ASCII is lower-cased by _lm_tokens
    cdef Py_ssize_t n = len(norm), length, tokens = 0
    cdef void *buf = PyMem_Malloc((2 * n + 1) * (1 if ascii else sizeof(Py_UCS4)))
    if buf == NULL:
        raise MemoryError()
    try:
        if ascii:
            length = _lm_tokens(norm, <char *> buf, &tokens)
            return PyUnicode_DecodeASCII(<char *> buf, length, NULL), tokens
        length = _lm_tokens(norm, <Py_UCS4 *> buf, &tokens)
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, length), tokens
    finally:
        PyMem_Free(buf)


cdef Py_ssize_t _lm_tokens(str norm, out_char *buf, Py_ssize_t *tokens):
    """:func:`lm_line`'s line of the normalised ``norm`` (lower-cased, but for its ASCII capitals) written into
    ``buf``; returns its length and counts the tokens into ``tokens``."""
    cdef Py_ssize_t length = 0
    cdef Py_UCS4 c
    cdef bint in_run = False
    for c in norm:
        if u'A' <= c <= u'Z':
            c = <Py_UCS4> (<Py_ssize_t> c + 32)
        elif _isdecimal(c):
            c = u'0'
        if c.isspace():
            in_run = False
            continue
        if (_isalnum(c) or c == u'_') and not _lm_cjk(c):
            if in_run:
                buf[length] = <out_char> c
                length += 1
                continue
            in_run = True
        else:
            in_run = False
        if tokens[0]:
            buf[length] = u' '
            length += 1
        buf[length] = <out_char> c
        length += 1
        tokens[0] += 1
    return length


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
            if c >= 0x0e00 and _unspaced(c):
                unspaced += 1
    spaced += unspaced // 2
    return spaced if spaced > 1 else 1


ctypedef fused real:
    float
    double


cdef inline real _pairwise(const real *a, Py_ssize_t n) noexcept nogil:
    """numpy's pairwise summation of contiguous values in accumulators of their own type (numpy's
    ``DOUBLE_pairwise_sum`` and ``FLOAT_pairwise_sum``: what ``ndarray.sum`` adds in)."""
    cdef real r0, r1, r2, r3, r4, r5, r6, r7, res
    cdef Py_ssize_t i, n2
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
        i = 8
        while i < n - (n % 8):
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(a, n2) + _pairwise(a + n2, n - n2)


def pairwise_sum(const double[::1] values):
    """``values.sum()`` as numpy adds it (pinned against numpy by the tests)."""
    return 0.0 + _pairwise(&values[0], values.shape[0]) if values.shape[0] else 0.0


def pairwise_sum32(const float[::1] values):
    """``values.sum()`` of float32 as numpy adds it (a float32 result)."""
    return np.float32(0.0 + _pairwise(&values[0], values.shape[0]) if values.shape[0] else 0.0)


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
cdef void _base_rows(list blocks, str primary, list log_ppl, float[:, ::1] out, Py_ssize_t col):
    """features._base of every block into columns ``col`` .. ``col + len(BASE) - 1`` of ``out``."""
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
                if _isupper(c):
                    title += 1
            if _isalpha(c):
                letters += 1
            if c == u',' or c == u'.' or c == u'\u3001' or c == u'\u3002' or c == u'\uff0c':
                punct += 1
            elif u'0' <= c <= u'9':
                digits += 1
            elif c >= 0x0e00 and _unspaced(c):
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
        out[i, col + 3] = 1.0 if text[n_chars - 1] in ENDS_SENTENCE else 0.0
        out[i, col + 4] = min(1.0, <double>punct / n_words)
        out[i, col + 5] = <double>digits / n_chars
        out[i, col + 6] = <double>title / n_words
        out[i, col + 7] = ppl if scored else 0.0
        out[i, col + 8] = 0.0 if scored else 1.0
        out[i, col + 9] = min(<double>block.depth, 30.0) / 30
        out[i, col + 10] = <double>letters / n_chars
        out[i, col + 11] = <double>(spaced - 1) / n_chars
        out[i, col + 12] = 1.0 if tag in HEADINGS else 0.0
        out[i, col + 13] = 1.0 if tag in LIST_ITEMS else 0.0
        out[i, col + 14] = 1.0 if tag in CELLS else 0.0
        out[i, col + 15] = 1.0 if tag in CODE or "pre" in block.ancestors else 0.0


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
              const double[::1] link_bins, const double[::1] ppl_bins):
    """features.featurize's dense matrix, computed as its numpy code computes it, into ``X`` (n x
    len(dense_names()), float32): bias, BASE, PAGE, the three one-hot bins, the neighbours and the window.
    Transcendental functions are numpy's own (np.expm1, np.log1p), sums are numpy's pairwise sums."""
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
    if X.shape[0] != n or X.shape[1] != WIN + 4:
        raise ValueError("X must be n x len(dense_names())")
    NEIGH[:] = [B + 0, B + 1, B + 2, B + 3]  # features.NEIGHBOUR: log_words, link_density, in_primary, ends_punct
    SHIFT[:] = [-1, -2, 1, 2]  # prev1, prev2, next1, next2
    _base_rows(blocks, primary, log_ppl, X, B)
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
    total = _pairwise(&words[0], n) if n else 0.0
    total = total if total > 1.0 else 1.0
    page_repeat = (_pairwise(&repeated[0], k) if k else 0.0) / total
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


@cython.boundscheck(False)
@cython.wraparound(False)
def tree_raw(const double[:, ::1] D, const Py_ssize_t[:, ::1] feature, const double[:, ::1] cut,
             const double[:, ::1] value, double baseline, int depth):
    """model.TreeEnsemble.raw: per row of ``D``, the baseline plus the leaf values it reaches in every
    tree (the trees one level per step, children of k at 2k+1 and 2k+2), summed as numpy sums them."""
    cdef Py_ssize_t n = D.shape[0], n_trees = feature.shape[0], width = feature.shape[1]
    cdef Py_ssize_t r, t, node, level, n0, n1, n2, n3
    cdef const Py_ssize_t *f
    cdef const double *c
    raw_arr = np.empty(n)
    cdef double[::1] raw = raw_arr
    cdef double *reached = <double *> malloc(max(n * n_trees, 1) * sizeof(double))  # row-major: row, tree
    if reached == NULL:
        raise MemoryError()
    with nogil:
        for t in range(n_trees):  # one tree over all rows (its nodes stay in cache), four walks at a time
            f, c = &feature[t, 0], &cut[t, 0]
            r = 0
            while r + 4 <= n:
                n0 = n1 = n2 = n3 = 0
                for level in range(depth):
                    n0 = 2 * n0 + 1 + (D[r, f[n0]] > c[n0])
                    n1 = 2 * n1 + 1 + (D[r + 1, f[n1]] > c[n1])
                    n2 = 2 * n2 + 1 + (D[r + 2, f[n2]] > c[n2])
                    n3 = 2 * n3 + 1 + (D[r + 3, f[n3]] > c[n3])
                reached[r * n_trees + t] = value[t, n0 - width]
                reached[(r + 1) * n_trees + t] = value[t, n1 - width]
                reached[(r + 2) * n_trees + t] = value[t, n2 - width]
                reached[(r + 3) * n_trees + t] = value[t, n3 - width]
                r += 4
            while r < n:
                node = 0
                for level in range(depth):
                    node = 2 * node + 1 + (D[r, f[node]] > c[node])
                reached[r * n_trees + t] = value[t, node - width]
                r += 1
        for r in range(n):
            raw[r] = baseline + (0.0 + _pairwise(reached + r * n_trees, n_trees))
    free(reached)
    return raw_arr


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


@cython.boundscheck(False)
@cython.wraparound(False)
def add_hashed(float[::1] out, list hashed, const float[::1] weights):
    """model.BlockModel.linear's sparse part: adds to ``out[i]`` the hashed weights of row i (summed in
    float64 in order, as np.bincount sums them, then rounded to float32)."""
    cdef Py_ssize_t i, index
    cdef double s
    cdef list row
    for i in range(len(hashed)):
        row = hashed[i]
        s = 0.0
        for index in row:
            s += weights[index]
        out[i] = out[i] + <float>s


@cython.boundscheck(False)
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
    total = 0.0 + _pairwise(&kept_words[0], n) if n else 0.0
    divisor = total if total >= 1.0 else 1.0
    total_d = log1p(<double>total)
    p = (0.0 + _pairwise(&prob[0], n)) / n if n else 0.0
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


cpdef tuple break_lines(str text, bint preformatted=False):
    """parse.break_lines: a block's collected text (``BREAK`` where a br was) as the text the features read and
    its lines as written (when two or more)."""
    cdef list lines
    cdef str line, part
    if preformatted:
        lines = [line.rstrip() for line in text.replace(BREAK, BREAK_LINE).split(BREAK_LINE)
                 if line and not line.isspace()]
        return _joined_words([" ".join(lines)]), (tuple(lines) if len(lines) > 1 else ())
    lines = []
    for part in text.split(BREAK):
        line = _joined_words([part])
        if not line:
            continue
        if lines and Py_UNICODE_ISLOWER(line[0]):
            lines[-1] = <str> lines[-1] + " " + line
        else:
            lines.append(line)
    return " ".join(lines), (tuple(lines) if len(lines) > 1 else ())


cpdef tuple block_text(list parts, list spaces, bint preformatted):
    """parse.block_text: a block's text from its collected ``parts`` and its lines as written, with a space before
    the parts whose indices ``spaces`` holds."""
    cdef str text, written
    cdef tuple lines, written_lines
    cdef list spaced
    cdef Py_ssize_t start = 0, index
    text, lines = break_lines("".join(parts), preformatted)
    if spaces:
        spaced = []
        for index in spaces:
            spaced.extend(parts[start:index])
            spaced.append(" ")
            start = index
        spaced.extend(parts[start:])
        written, written_lines = break_lines("".join(spaced), preformatted)
        if written_lines or written != text:
            lines = written_lines or (written,)
    return text, lines


# extractors.FLAT_TAGS (at most 64 names of at most 8 letters), each name's letters packed into one integer by _pack.
from pipeline.steps import extractors as _extractors

cdef list _FLAT_NAMES = sorted(_extractors.FLAT_TAGS)
if len(_FLAT_NAMES) > 64 or max(map(len, _FLAT_NAMES)) > 8:
    raise ImportError("extractors.FLAT_TAGS does not fit the compiled module's keys (64 names of 8 letters)")
cdef unsigned long long _FLAT_KEYS[64]
cdef Py_ssize_t _N_FLAT = len(_FLAT_NAMES)


cdef inline unsigned long long _pack(Py_UCS4 c, unsigned long long key, Py_ssize_t position) noexcept:
    """``key`` with the lower-cased ASCII letter or digit ``c`` as its byte at ``position``."""
    cdef unsigned long long code = <unsigned long long> c
    if 65 <= code <= 90:  # A-Z
        code += 32
    return key | (code << (8 * position))


cdef void _pack_flat_names():
    cdef Py_ssize_t index, position
    for index, name in enumerate(_FLAT_NAMES):
        _FLAT_KEYS[index] = 0
        for position, c in enumerate(name):
            _FLAT_KEYS[index] = _pack(c, _FLAT_KEYS[index], position)


_pack_flat_names()


cdef inline bint _ascii_letter(Py_UCS4 c) noexcept:
    return (u'a' <= c <= u'z') or (u'A' <= c <= u'Z')


cdef inline bint _flat(unsigned long long key) noexcept:
    cdef Py_ssize_t j
    for j in range(_N_FLAT):
        if _FLAT_KEYS[j] == key:
            return True
    return False


cdef class CharRanges:
    """A set of characters given as inclusive ranges, ``(first, last)`` code points (document.FORMAT_CHARACTERS'
    class): :meth:`search` tells whether a text holds one, as ``re.search`` of the class would."""

    cdef Py_UCS4 *first
    cdef Py_UCS4 *last
    cdef Py_ssize_t n
    cdef Py_UCS4 least

    def __cinit__(self, list ranges):
        self.n = len(ranges)
        self.first = <Py_UCS4 *> PyMem_Malloc((self.n + 1) * sizeof(Py_UCS4))
        self.last = <Py_UCS4 *> PyMem_Malloc((self.n + 1) * sizeof(Py_UCS4))
        if self.first == NULL or self.last == NULL:
            raise MemoryError()
        self.least = 0x10ffff
        for k, (first, last) in enumerate(ranges):
            self.first[k], self.last[k] = first, last
            self.least = min(self.least, <Py_UCS4> first)

    def __dealloc__(self):
        PyMem_Free(self.first)
        PyMem_Free(self.last)

    def search(self, str text):
        cdef Py_UCS4 c
        cdef Py_ssize_t k
        for c in text:
            if c >= self.least:
                for k in range(self.n):
                    if self.first[k] <= c <= self.last[k]:
                        return True
        return False


def nesting_depth(str html, Py_ssize_t stop_above):
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
                   and _ascii_letter(PyUnicode_READ(kind, data, i + 1)))
        if closing:
            i += 1
        if i >= n or not _ascii_letter(PyUnicode_READ(kind, data, i)):
            continue  # no tag name: the scan goes on after the '<'
        start = i
        key = 0
        while i < n:
            c = PyUnicode_READ(kind, data, i)
            if not (_ascii_letter(c) or (u'0' <= c <= u'9')):
                break
            if i - start < 8:
                key = _pack(c, key, i - start)
            i += 1
        if i - start <= 8 and _flat(key):
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
# name from the sets themselves, _tag_flags) and the few names it tests one by one.
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
cdef frozenset EXCLUDED_TAGS = _parse.EXCLUDED_TAGS


cdef int _tag_flags(str tag) except -1:
    """The TAG_* bits of the element name ``tag``."""
    return ((TAG_INLINE if tag in INLINE else 0) | (TAG_SKIP if tag in SKIP else 0)
            | (TAG_UNSEEN if tag in UNSEEN else 0) | (TAG_UNJOINED if tag in UNJOINED else 0)
            | (TAG_PREFORMATTED if tag in PREFORMATTED else 0) | (TAG_EXCLUDED if tag in EXCLUDED_TAGS else 0)
            | (TAG_BR if tag == "br" else 0) | (TAG_BODY if tag == "body" else 0) | (TAG_LINK if tag == "a" else 0)
            | (TAG_META if tag == "meta" else 0) | (TAG_SCRIPT if tag == "script" else 0))


# libxml2's element names -> the name as str, its TAG_* bits and its place in parse.COUNTED_TAGS (-1: none): an open
# addressing table of the names met so far, so an event costs no decoding and no set lookups. A name longer than
# TAG_KEY - 1 bytes, or met once TAG_CACHED names are held, is decoded and looked up at every event instead.
cdef enum:
    TAG_SLOTS = 1024  # a power of two
    TAG_KEY = 32
    TAG_CACHED = 512

cdef struct _Tag:
    char key[TAG_KEY]  # the name as libxml2 gives it, NUL-terminated; empty: a free slot
    PyObject *name  # the name as str (a reference the table holds for the life of the module)
    int flags
    int counted

cdef _Tag _TAGS[TAG_SLOTS]
cdef _Tag _UNCACHED  # the answer for a name the table does not hold (valid until the next lookup)
cdef Py_ssize_t _tags_held = 0
memset(_TAGS, 0, sizeof(_TAGS))
memset(&_UNCACHED, 0, sizeof(_UNCACHED))


cdef int _fill(_Tag *slot, const char *name, Py_ssize_t length) except -1:
    """``slot``'s name (a new reference, the old one released), bits and counted index for ``name``."""
    cdef str tag = PyUnicode_DecodeUTF8(name, length, NULL)
    cdef Py_ssize_t k
    Py_INCREF(tag)
    Py_XDECREF(slot.name)
    slot.name = <PyObject *> tag
    slot.flags = _tag_flags(tag)
    slot.counted = -1
    for k in range(N_COUNTED):
        if strcmp(name, _COUNTED_NAMES[k]) == 0:
            slot.counted = k
            break
    return 0


cdef _Tag *_tag_entry(const char *name) except NULL:
    """The table's entry for the element name ``name``, made on first sight."""
    global _tags_held
    cdef Py_ssize_t length = strlen(name)
    cdef unsigned int h = 2166136261u
    cdef Py_ssize_t k, i
    cdef _Tag *slot
    if 0 < length < TAG_KEY:
        for k in range(length):  # FNV-1a
            h = (h ^ <unsigned char> name[k]) * 16777619u
        i = h & (TAG_SLOTS - 1)
        while True:
            slot = &_TAGS[i]
            if slot.key[0] == 0:
                break
            if strcmp(slot.key, name) == 0:
                return slot
            i = (i + 1) & (TAG_SLOTS - 1)
        if _tags_held < TAG_CACHED:
            _fill(slot, name, length)
            memcpy(slot.key, name, length + 1)
            _tags_held += 1
            return slot
    _fill(&_UNCACHED, name, length)
    return &_UNCACHED


cdef class _Owner:
    """parse._Owner: a block-level element on the parser's stack, collecting its runs of text."""

    cdef public Py_ssize_t element, depth, parent, link
    cdef public bint excluded, preformatted
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

    cdef tuple prefixed(self, Py_ssize_t level):
        cdef str prefix
        cdef tuple out = <tuple> self.by_level[level]
        if out is None:
            prefix = LEVEL_PREFIXES[level]
            out = self.by_level[level] = tuple([prefix + t for t in self.tokens])
        return out


# Class and id values (joined as parse.attr_tokens joins them) -> their _ClassId, or None when they have no tokens: a
# page's elements, and a site's pages, repeat the same few. Bounded as parse.ATTR_TOKENS is.
cdef dict CLASS_IDS = {}
cdef Py_ssize_t ATTR_CACHE_SIZE = _parse.ATTR_CACHE_SIZE


cdef tuple _ascii_class_id_tokens(str class_id):
    """parse.class_id_tokens of an ASCII value: its runs of letters of two or more, lower-cased."""
    cdef const char *data = <const char *> PyUnicode_DATA(class_id)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(class_id), i = 0, start
    cdef list tokens = []
    while i < n:
        if not _ascii_letter(data[i]):
            i += 1
            continue
        start = i
        while i < n and _ascii_letter(data[i]):
            i += 1
        if i - start > 1:
            tokens.append(PyUnicode_DecodeASCII(data + start, i - start, NULL).lower())
    return tuple(tokens)


cdef _Owner _owner(Py_ssize_t element, str tag, tuple ancestors, tuple levels, Py_ssize_t depth, Py_ssize_t parent,
                   bint excluded, bint preformatted):
    """A new _Owner (without the Python call of a constructor)."""
    cdef _Owner owner = _Owner.__new__(_Owner)
    owner.element, owner.tag, owner.ancestors, owner.levels, owner.depth = element, tag, ancestors, levels, depth
    owner.parent, owner.excluded, owner.preformatted = parent, excluded, preformatted
    owner.parts = []
    owner.link = 0
    owner.breaks = False
    owner.separator = 0
    owner.spaces = None
    return owner


cdef class BlockTarget:
    """parse._BlockTarget, compiled: the HTML parser's events -> blocks (``block_class`` objects). Its stack
    is three lists (tag, the owner the element opened or None, inside a link) instead of tuples."""

    cdef public list blocks, owners, tags, opened, links
    cdef public Py_ssize_t element, skip
    cdef public object markup  # a parse.Markup, complete after close()
    cdef public bint in_json_ld, junction  # junction: an inline element has just ended (nothing since)
    cdef Py_ssize_t https_links, http_links, data_attributes, aria_attributes  # counted from libxml2's arrays
    cdef Py_ssize_t tag_counts[N_COUNTED]  # parse.COUNTED_TAGS' start tags, counted from libxml2's names
    cdef object block_class, class_id_tokens, excluded_part, markup_class, read_markup
    cdef object error  # raised inside a libxml2 callback (parse_html)

    def __init__(self, block_class, class_id_tokens, excluded_part, markup_class, read_markup):
        """``class_id_tokens``: parse.class_id_tokens, asked about class and id values that are not ASCII and not in
        ``CLASS_IDS``; ``excluded_part``: parse.excluded_part, asked only about an element that could be one
        (of parse.EXCLUDED_TAGS, or with a role or aria-modal attribute); ``markup_class`` and ``read_markup``:
        parse.Markup, and parse.read_markup for lxml's attribute mappings (libxml2's arrays are read here,
        :meth:`_read_attributes`)."""
        self.block_class, self.class_id_tokens = block_class, class_id_tokens
        self.excluded_part = excluded_part
        self.markup_class, self.read_markup = markup_class, read_markup
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

    cdef _flush(self, _Owner owner):
        cdef str text
        cdef tuple lines = ()
        cdef Py_ssize_t link
        if owner.parts:
            if owner.breaks or owner.spaces is not None:
                text, lines = block_text(owner.parts, owner.spaces, owner.preformatted)
            else:
                text = _joined_words(owner.parts)
            if text:
                link = owner.link if owner.link < len(text) else len(text)
                self.blocks.append(self.block_class(text, owner.element, owner.tag, owner.ancestors, owner.attrs(),
                                                    link, owner.depth, owner.parent, owner.excluded, lines,
                                                    owner.preformatted))
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
        self._start(tag, _tag_flags(tag), NULL, attrib)

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
                    owner.separator = SKIPPED
            return
        in_link = bool(self.links) and self.links[-1]
        if not self.owners:
            if flags & TAG_BODY:
                owner = _owner(self.element, tag, (), (), 0, -1, False, False)
                self.owners.append(owner)
                self._push(tag, owner, False)
            else:
                self._push(tag, None, False)
            return
        owner = self.owners[-1]
        if flags & TAG_INLINE:
            if (junction and not flags & TAG_UNJOINED and owner.parts and not owner.separator
                    and not owner.preformatted):
                owner.separator = JUNCTION
            self._push(tag, None, in_link or flags & TAG_LINK)
        elif flags & TAG_BR:
            owner.parts.append(BREAK)
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
                           owner.preformatted or flags & TAG_PREFORMATTED)
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
        """The _ClassId of a class and id value (None: no tokens), from ``CLASS_IDS`` when there; an ASCII value is
        tokenized here, another by ``class_id_tokens`` (parse.class_id_tokens)."""
        cdef object known = CLASS_IDS.get(class_id, False)
        cdef tuple tokens
        cdef _ClassId entry = None
        if known is not False:
            return known
        tokens = (_ascii_class_id_tokens(class_id) if PyUnicode_IS_ASCII(class_id)
                  else <tuple> self.class_id_tokens(class_id))
        if tokens:
            entry = _ClassId.__new__(_ClassId)
            entry.tokens, entry.by_level = tokens, [None, None, None, None]
        if len(CLASS_IDS) >= ATTR_CACHE_SIZE:
            CLASS_IDS.clear()
        CLASS_IDS[class_id] = entry
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
        self._end(tag, _tag_flags(tag))

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
            _settle_separator(owner, text)
        owner.parts.append(text)
        if owner.preformatted and not owner.breaks and "\n" in text:
            owner.breaks = True
        if self.links[-1]:
            owner.link += len(text)

    def close(self):
        while self.owners:
            self._flush(self.owners.pop())
        markup = self.markup
        markup.elements = self.element + 1
        markup.https_links += self.https_links
        markup.http_links += self.http_links
        markup.data_attributes += self.data_attributes
        markup.aria_attributes += self.aria_attributes
        for k in range(N_COUNTED):
            markup.tags[COUNTED_TAGS[k]] += self.tag_counts[k]
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
        tag = _tag_entry(<const char *> name)
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
        tag = _tag_entry(<const char *> name)
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


# The perplexity filter's pooling (pipeline.steps.perplexity): the same float operations in the same order
# as its Python (Python 3.11's sum() of floats adds left to right in a double, from the first term).

cdef inline double _log_term(double perplexity, Py_ssize_t n_tokens) noexcept:
    """perplexity._log_term of a scored unit: (tokens + 1) * log10(max(perplexity, 1.0))."""
    return <double> (n_tokens + 1) * log10(1.0 if 1.0 > perplexity else perplexity)


_new_tuple = tuple.__new__  # a NamedTuple made without its Python-level __new__


def judge(list units, bint by_line, bint windowed, Py_ssize_t window_tokens, unit_type):
    """perplexity.Judgement's ``groups``, ``judged`` and ``scores`` of ``units`` (perplexity.Unit tuples:
    perplexity or None, LM tokens, paragraph): the groups (one per line when ``by_line``) pooled, then
    (``windowed``) each pooled unit with its neighbours until it holds ``window_tokens`` tokens.
    ``unit_type`` (a NamedTuple of those three fields) is the result's units' type."""
    cdef Py_ssize_t n = len(units), g, i, j, k, m, weight, n_scored, held, lo, hi, total
    cdef double log_sum
    cdef tuple unit
    cdef list groups, group, judged = [], scores
    cdef dict by_paragraph
    if by_line:
        by_paragraph = {}
        for i in range(n):
            paragraph = (<tuple> units[i])[2]
            group = by_paragraph.get(paragraph)
            if group is None:
                by_paragraph[paragraph] = [i]
            else:
                group.append(i)
        groups = list(by_paragraph.values())
    else:
        groups = [[i] for i in range(n)]
    m = len(groups)
    cdef double *terms = <double *> PyMem_Malloc((m + 1) * sizeof(double))
    cdef Py_ssize_t *tokens = <Py_ssize_t *> PyMem_Malloc((m + 1) * sizeof(Py_ssize_t))
    cdef unsigned char *scored = <unsigned char *> PyMem_Malloc(m + 1)
    if terms == NULL or tokens == NULL or scored == NULL:
        PyMem_Free(terms)
        PyMem_Free(tokens)
        PyMem_Free(scored)
        raise MemoryError()
    try:
        for g in range(m):  # pooled() of each group
            group = <list> groups[g]
            log_sum, weight, n_scored, total = 0.0, 0, 0, 0
            for k in range(len(group)):
                unit = <tuple> units[<Py_ssize_t> group[k]]
                total += <Py_ssize_t> unit[1]
                if unit[0] is not None:
                    log_sum += _log_term(<double> unit[0], <Py_ssize_t> unit[1])
                    weight += <Py_ssize_t> unit[1] + 1
                    n_scored += 1
            paragraph = (<tuple> units[<Py_ssize_t> group[0]])[2]
            if n_scored:
                perplexity = pow(10.0, log_sum / weight)
                tokens[g], scored[g] = weight - n_scored, 1
                terms[g] = _log_term(perplexity, tokens[g])
                judged.append(_new_tuple(unit_type, (perplexity, tokens[g], paragraph)))
            else:
                tokens[g], scored[g], terms[g] = total, 0, 0.0
                judged.append(_new_tuple(unit_type, (None, total, paragraph)))
        if not windowed:
            return groups, judged, judged
        scores = []
        for i in range(m):  # with_neighbours(judged, window_tokens)
            if not scored[i]:
                scores.append(judged[i])
                continue
            log_sum, weight, n_scored = terms[i], tokens[i] + 1, 1
            held, lo, hi = tokens[i], i - 1, i + 1
            while held < window_tokens and (lo >= 0 or hi < m):
                for k in range(2):
                    j = lo if k == 0 else hi
                    if 0 <= j < m:
                        held += tokens[j]
                        if scored[j]:
                            log_sum += terms[j]
                            weight += tokens[j] + 1
                            n_scored += 1
                lo -= 1
                hi += 1
            scores.append(_new_tuple(unit_type, (pow(10.0, log_sum / weight), weight - n_scored, (<tuple> judged[i])[2])))
        return groups, judged, scores
    finally:
        PyMem_Free(terms)
        PyMem_Free(tokens)
        PyMem_Free(scored)


cdef enum:
    KIND_DIGIT = 1  # normalize.DIGIT
    KIND_GAP = 2  # normalize.GAP


cdef class _CharacterKinds:
    """normalize.py's kind of every character (WORD 0, DIGIT 1, GAP 2): ``kinds``, a table of the Basic Multilingual
    Plane, and ``kind_of``, which answers for a character beyond it; both are normalize.py's, so the rule lives there."""

    cdef bytes kinds
    cdef const unsigned char *table
    cdef object kind_of

    cdef _set_kinds(self, bytes kinds, kind_of):
        if kinds is None or len(kinds) != 0x10000:
            raise ValueError("kinds must hold the 65536 characters of the Basic Multilingual Plane")
        self.kinds, self.table, self.kind_of = kinds, <const unsigned char *> kinds, kind_of


cdef unsigned char _kind_beyond(_CharacterKinds kinds, Py_UCS4 c) except 255:
    return kinds.kind_of(c)


cdef inline unsigned char _kind(_CharacterKinds kinds, Py_UCS4 c) except? 255:
    """The kind of ``c``: a function, not a method (no virtual call per character), that asks ``kind_of`` out of
    line for a character beyond the table."""
    if c < 0x10000:
        return kinds.table[c]
    return _kind_beyond(kinds, c)


cdef class Normalizer(_CharacterKinds):
    """The corpus stages' normalisation (:mod:`pipeline.corpus.normalize`): lower-cased, a DIGIT character to 0,
    a GAP character (punctuation, symbols, white space) between words as one space, none at a line's ends."""

    def __cinit__(self, bytes kinds, kind_of):
        self._set_kinds(kinds, kind_of)

    cdef object _run(self, str text, bint as_lines):
        cdef str lowered = text.lower()
        cdef Py_ssize_t length = 0, start = 0
        cdef Py_UCS4 c
        cdef unsigned char kind
        cdef bint gap = False
        cdef list lines = []
        cdef Py_UCS4 *buf = <Py_UCS4 *> PyMem_Malloc((len(lowered) + 1) * sizeof(Py_UCS4))
        if buf == NULL:
            raise MemoryError()
        try:
            for c in lowered:
                if c == u'\n':
                    if as_lines:
                        lines.append(PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, length))
                        length = 0
                    elif length > start:  # a line break only after a line that kept a word
                        buf[length] = u'\n'
                        length += 1
                        start = length
                    gap = False
                    continue
                kind = _kind(self, c)
                if kind == KIND_GAP:
                    gap = True
                    continue
                if gap and length > start:
                    buf[length] = u' '
                    length += 1
                gap = False
                buf[length] = u'0' if kind == KIND_DIGIT else c
                length += 1
            if as_lines:
                lines.append(PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, length))
                return lines
            if length and length == start:  # the break after the last line that kept a word
                length -= 1
            return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, length)
        finally:
            PyMem_Free(buf)

    def lines(self, str text):
        """normalize.normalized_lines: each line normalised, aligned with ``text.split("\\n")``."""
        return self._run(text, True)

    def text(self, str text):
        """normalize.normalized_text: the lines that keep a word, normalised and joined by line breaks."""
        return self._run(text, False)


cdef Py_ssize_t _distinct_windows(const Py_ssize_t *ids, Py_ssize_t n_ids, Py_ssize_t width) except -1:
    """How many distinct runs of ``width`` consecutive values ``ids`` holds (its n-grams), counted exactly:
    a table of rolling hashes whose equal entries are compared value by value."""
    cdef Py_ssize_t n = n_ids - width + 1, size = 16, i, k, slot, other
    cdef unsigned long long h = 0, power = 1, P = 0x100000001b3ULL, mixed
    cdef unsigned long long *hashes
    cdef Py_ssize_t *table
    cdef Py_ssize_t distinct = 0
    cdef bint same
    while size < 2 * n:
        size *= 2
    hashes = <unsigned long long *> PyMem_Malloc(n * sizeof(unsigned long long))
    table = <Py_ssize_t *> PyMem_Malloc(size * sizeof(Py_ssize_t))
    if hashes == NULL or table == NULL:
        PyMem_Free(hashes)
        PyMem_Free(table)
        raise MemoryError()
    for k in range(width):
        h = h * P + <unsigned long long> ids[k]
        if k:
            power *= P
    for i in range(size):
        table[i] = -1
    for i in range(n):
        if i:
            h = (h - power * <unsigned long long> ids[i - 1]) * P + <unsigned long long> ids[i + width - 1]
        hashes[i] = h
        mixed = (h ^ (h >> 31)) * 0xbf58476d1ce4e5b9ULL
        slot = <Py_ssize_t> ((mixed ^ (mixed >> 29)) & <unsigned long long> (size - 1))
        while True:
            other = table[slot]
            if other < 0:
                table[slot] = i
                distinct += 1
                break
            if hashes[other] == h:
                same = True
                for k in range(width):
                    if ids[other + k] != ids[i + k]:
                        same = False
                        break
                if same:
                    break
            slot = (slot + 1) & (size - 1)
    PyMem_Free(hashes)
    PyMem_Free(table)
    return distinct


cdef inline double _share(Py_ssize_t part, Py_ssize_t whole) noexcept:
    return (<double> part) / (<double> whole) if whole > 0 else 0.0


cdef class SignalCounter(_CharacterKinds):
    """The quality signals of one document (:func:`pipeline.corpus.signals.document_signals`, the reference this
    computes the same values as). The character sets are signals.py's and the kinds of characters (a GAP is
    punctuation or a symbol inside a word) normalize.py's, so every rule lives there."""

    cdef unsigned char space[0x3001]
    cdef str terminal, bullets, line_space, line_break

    def __cinit__(self, bytes kinds, kind_of, str white_space not None, str terminal not None,
                  str bullets not None, str line_space not None, str line_break not None):
        cdef Py_UCS4 c
        self._set_kinds(kinds, kind_of)
        memset(self.space, 0, sizeof(self.space))
        for c in white_space:
            if c > 0x3000:
                raise ValueError("white space beyond U+3000")
            self.space[c] = 1
        self.terminal, self.bullets, self.line_space, self.line_break = terminal, bullets, line_space, line_break

    cdef inline bint _is_space(self, Py_UCS4 c) noexcept:
        return c <= 0x3000 and self.space[c]

    cdef inline bint _is_mark(self, Py_UCS4 c) except -1:
        return _kind(self, c) == KIND_GAP

    cdef str _stripped(self, str word):
        cdef Py_ssize_t start = 0, end = len(word)
        while start < end and self._is_mark(word[start]):
            start += 1
        while end > start and self._is_mark(word[end - 1]):
            end -= 1
        return word if start == 0 and end == len(word) else word[start:end]

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def signals(self, str text, stop, Py_ssize_t ngram_words):
        """signals.document_signals of ``text`` with the stop words ``stop`` (a frozenset, or None)."""
        cdef Py_ssize_t n = len(text), i, start = 0, end, j, skip = 0
        cdef Py_ssize_t n_lines = 0, terminal = 0, bullet = 0, ellipsis = 0
        cdef Py_ssize_t n_words = 0, word_chars = 0, symbols = 0, n_ids = 0, n_stop = 0, n_grams, word_start
        cdef Py_UCS4 c
        cdef bint in_word = False
        cdef set lines = set()
        cdef dict vocabulary = {}
        cdef str lowered, word
        cdef object known
        cdef Py_ssize_t *ids
        cdef unsigned char *stopped
        for i in range(n + 1):
            c = text[i] if i < n else u'\n'
            if c == u'\n':  # a line ends: [start, i)
                n_lines += 1
                lines.add(text[start:i])
                end = i
                if end > start and text[end - 1] in self.line_break:
                    end -= 1
                while end > start and text[end - 1] in self.line_space:
                    end -= 1
                if end > start and text[end - 1] in self.terminal:
                    terminal += 1
                if (end > start and text[end - 1] == u'…') or (end - start >= 3 and text[end - 1] == u'.'
                                                                 and text[end - 2] == u'.' and text[end - 3] == u'.'):
                    ellipsis += 1
                j = start
                while j < i and text[j] in self.line_space:
                    j += 1
                if j < i and text[j] in self.bullets:
                    bullet += 1
                start = i + 1
                if i == n:
                    break
            if self._is_space(c):
                in_word = False
            else:
                word_chars += 1
                if not in_word:
                    n_words += 1
                    in_word = True
            if skip:
                skip -= 1
            elif c == u'#' or c == u'…':
                symbols += 1
            elif c == u'.' and i + 2 < n and text[i + 1] == u'.' and text[i + 2] == u'.':
                symbols += 1
                skip = 2
        lowered = text.lower()
        n = len(lowered)
        ids = <Py_ssize_t *> PyMem_Malloc((n // 2 + 2) * sizeof(Py_ssize_t))
        stopped = <unsigned char *> PyMem_Malloc(n // 2 + 2)
        if ids == NULL or stopped == NULL:
            PyMem_Free(ids)
            PyMem_Free(stopped)
            raise MemoryError()
        try:
            word_start = -1
            for i in range(n + 1):
                c = lowered[i] if i < n else u' '
                if not self._is_space(c):
                    if word_start < 0:
                        word_start = i
                    continue
                if word_start < 0:
                    continue
                word = lowered[word_start:i]
                word_start = -1
                known = vocabulary.get(word)
                if known is None:
                    j = len(vocabulary)
                    vocabulary[word] = j
                    stopped[j] = stop is not None and self._stripped(word) in stop
                else:
                    j = known
                ids[n_ids] = j
                n_ids += 1
                n_stop += stopped[j]
            n_grams = n_ids - ngram_words + 1
            duplicate_ngrams = (_share(n_grams - _distinct_windows(ids, n_ids, ngram_words), n_grams)
                                if n_grams > 1 else 0.0)
        finally:
            PyMem_Free(ids)
            PyMem_Free(stopped)
        return (n_words, n_lines, _share(word_chars, n_words), _share(symbols, n_words), _share(terminal, n_lines),
                _share(bullet, n_lines), _share(ellipsis, n_lines), _share(n_lines - len(lines), n_lines),
                duplicate_ngrams, None if stop is None else n_stop, None if stop is None else _share(n_stop, n_words))
