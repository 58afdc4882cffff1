# The block features: each block's row of the dense matrix (the columns of pipeline/_native/columns.py, looked up here
# by name: a feature is a row of that table and its line below), its hashed tokens, and the words of resiliparse's
# main-content text it is found in. Sums are numpy's pairwise sums, transcendental functions numpy's own (called once a
# page on whole arrays), as the classifier was fitted on them.

import zlib

from pipeline._native import columns as _columns

HASH_DIM = 1 << 12  # the hashed tokens' space
# A block whose text ends in one of these ends a sentence.
ENDS_SENTENCE = ".!?:;\"'\u201d)\u3002\uff01\uff1f\u300d\u300f"
LIST_ITEMS = frozenset("li dt dd".split())
CELLS = frozenset("td th".split())
CODE = frozenset("pre code".split())

cdef dict _C = _columns.COLUMN
# BASE
cdef Py_ssize_t C_BIAS = _C["bias"], C_LOG_WORDS = _C["log_words"], C_LINK_DENSITY = _C["link_density"]
cdef Py_ssize_t C_IN_PRIMARY = _C["in_primary"], C_ENDS_PUNCT = _C["ends_punct"], C_COMMA_RATE = _C["comma_rate"]
cdef Py_ssize_t C_DIGIT_SHARE = _C["digit_share"], C_TITLE_SHARE = _C["title_share"], C_LOG_PPL = _C["log_ppl"]
cdef Py_ssize_t C_NO_PPL = _C["no_ppl"], C_DEPTH = _C["depth"], C_LETTER_SHARE = _C["letter_share"]
cdef Py_ssize_t C_SPACE_SHARE = _C["space_share"], C_HEADING = _C["heading"], C_LIST_ITEM = _C["list_item"]
cdef Py_ssize_t C_CELL = _C["cell"], C_CODE = _C["code"]
# PAGE
cdef Py_ssize_t C_POSITION = _C["position"], C_PPL_VS_PAGE = _C["ppl_vs_page"], C_PPL_RANK = _C["ppl_rank"]
cdef Py_ssize_t C_PAGE_IN_PRIMARY = _C["page_in_primary"], C_LOG_PAGE_BLOCKS = _C["log_page_blocks"]
cdef Py_ssize_t C_WORDS_RANK = _C["words_rank"], C_WORD_SHARE = _C["word_share"], C_LOG_SIBLINGS = _C["log_siblings"]
cdef Py_ssize_t C_LOG_REPEATS = _C["log_repeats"], C_REPEAT_WORD_SHARE = _C["repeat_word_share"]
cdef Py_ssize_t C_REPEAT_LINK_DENSITY = _C["repeat_link_density"], C_PAGE_REPEAT_SHARE = _C["page_repeat_share"]
cdef Py_ssize_t C_PAGE_LM = _C["page_lm"]
# the one-hot groups (their first column), the neighbours' and the window's
cdef Py_ssize_t C_WORDS_BIN = _C["words_bin0"], C_LINK_BIN = _C["link_bin0"], C_PPL_BIN = _C["ppl_bin0"]
cdef Py_ssize_t N_NEIGHBOUR = len(_columns.NEIGHBOUR), N_SHIFTS = len(_columns.SHIFTS)
cdef Py_ssize_t C_NEIGHBOURS = _C[f"{_columns.SHIFTS[0][0]}.{_columns.NEIGHBOUR[0]}"]
cdef Py_ssize_t C_WINDOW = _C[f"win.{_columns.NEIGHBOUR[0]}"]
cdef Py_ssize_t WINDOW = _columns.WINDOW
cdef Py_ssize_t N_DENSE = len(_columns.dense_names())  # the columns page_rows writes (NODES are the caller's)
cdef Py_ssize_t NEIGH[8]  # the columns of NEIGHBOUR
cdef Py_ssize_t SHIFT[8]  # the neighbours' offsets, in SHIFTS order
if N_NEIGHBOUR > 8 or N_SHIFTS > 8:
    raise ImportError("columns.NEIGHBOUR and columns.SHIFTS hold at most 8 entries each")
for _k, _name in enumerate(_columns.NEIGHBOUR):
    NEIGH[_k] = _C[_name]
for _k, (_side, _offset) in enumerate(_columns.SHIFTS):
    SHIFT[_k] = _offset
    if _C[f"{_side}.{_columns.NEIGHBOUR[0]}"] != C_NEIGHBOURS + _k * N_NEIGHBOUR:
        raise ImportError("columns.dense_names must list each shift's NEIGHBOUR columns together, in SHIFTS order")
_BIN_EDGES = tuple(np.asarray(edges, dtype=np.float64)
                   for edges in (_columns.WORD_BINS, _columns.LINK_BINS, _columns.PPL_BINS))
cdef const double[::1] WORD_EDGES = _BIN_EDGES[0]
cdef const double[::1] LINK_EDGES = _BIN_EDGES[1]
cdef const double[::1] PPL_EDGES = _BIN_EDGES[2]

# Bits of the filter of the primary text's 4-grams (_Grams, html.pxd): a block with a 4-gram not in it is not in the
# text.
cdef inline Py_ssize_t _gram_bit(unsigned long long window) noexcept nogil:
    return <Py_ssize_t> ((window * 0x9E3779B97F4A7C15ULL) >> (64 - GRAM_BITS))


cdef class _Grams:
    """The 4-grams of a text in a bit filter: ``maybe_in`` is False only for texts with a 4-gram the text
    lacks (never a substring of it), so ``text in primary`` is searched for only where it may hold."""
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
cdef void _base_rows(list blocks, str primary, list log_ppl, float[:, ::1] out):
    """Each block's BASE columns (columns.BASE says what each holds)."""
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
        out[i, C_LOG_WORDS] = log1p(<double>n_words)
        out[i, C_LINK_DENSITY] = <double>block.link_chars / n_chars
        found = -1
        if n_primary and grams.maybe_in(text):
            # blocks come in the primary text's order: look after the last one found first, then before it
            found = PyUnicode_Find(primary, text, after, n_primary, 1)
            if found == -1 and after:
                found = PyUnicode_Find(primary, text, 0, min(after + n_chars - 1, n_primary), 1)
            if found >= 0:
                after = found + n_chars
        out[i, C_IN_PRIMARY] = 1.0 if found >= 0 else 0.0
        out[i, C_ENDS_PUNCT] = 1.0 if text[n_chars - 1] in ENDS_SENTENCE else 0.0
        out[i, C_COMMA_RATE] = min(1.0, <double>punct / n_words)
        out[i, C_DIGIT_SHARE] = <double>digits / n_chars
        out[i, C_TITLE_SHARE] = <double>title / n_words
        out[i, C_LOG_PPL] = ppl if scored else 0.0
        out[i, C_NO_PPL] = 0.0 if scored else 1.0
        out[i, C_DEPTH] = min(<double>block.depth, 30.0) / 30
        out[i, C_LETTER_SHARE] = <double>letters / n_chars
        out[i, C_SPACE_SHARE] = <double>(spaced - 1) / n_chars
        out[i, C_HEADING] = 1.0 if tag in HEADINGS else 0.0
        out[i, C_LIST_ITEM] = 1.0 if tag in LIST_ITEMS else 0.0
        out[i, C_CELL] = 1.0 if tag in CELLS else 0.0
        out[i, C_CODE] = 1.0 if tag in CODE or "pre" in block.ancestors else 0.0


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
    """Each value's percentile rank among the masked values (ties by position), 0.5 elsewhere."""
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
    """Dense ids of equal keys in first-seen order; returns the number of groups."""
    cdef dict index = {}
    cdef Py_ssize_t i
    for i in range(len(keys)):
        ids[i] = index.setdefault(keys[i], len(index))
    return len(index)


@cython.boundscheck(False)
@cython.wraparound(False)
@cython.cdivision(True)
def page_rows(list blocks, str primary_text, list log_ppl, bint page_lm, float[:, ::1] X):
    """The page's dense matrix into ``X`` (blocks x at least len(columns.dense_names()), float32): bias, BASE, PAGE,
    the three one-hot groups, the neighbours and the window (the columns after those, columns.NODES, are the
    caller's). ``primary_text``: resiliparse's main-content text of the page; ``log_ppl``: each block's log10
    perplexity less the model's centre (NaN: unscored); ``page_lm``: the page's language has a model."""
    cdef Py_ssize_t n = len(blocks), i, j, k, m, lo, hi, n_groups
    cdef float a, b, page_ppl
    cdef double total, page_repeat, step, s, in_primary
    cdef str primary = _joined_words([primary_text])
    if X.shape[0] != n or X.shape[1] < N_DENSE:
        raise ValueError("X must be n x len(dense_names())")
    _base_rows(blocks, primary, log_ppl, X)
    words_arr = np.expm1(np.asarray(X[:, C_LOG_WORDS]).astype(np.float64))
    cdef const double[::1] words = words_arr
    cdef double[::1] rel = np.empty(n)
    cdef unsigned char[::1] scored = np.empty(n, dtype=np.uint8)
    cdef unsigned char[::1] every = np.ones(n, dtype=np.uint8)
    cdef float[::1] sorted_ppl = np.empty(n, dtype=np.float32)
    cdef double[::1] ppl_rank = np.empty(n), words_rank = np.empty(n)
    m = 0
    for i in range(n):
        rel[i] = X[i, C_LOG_PPL]
        scored[i] = X[i, C_NO_PPL] == 0
        if scored[i]:
            sorted_ppl[m] = X[i, C_LOG_PPL]
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
        in_primary += X[i, C_IN_PRIMARY]
    # repeated sibling structures (seed 004): siblings (parent, tag) and signatures (tag, ancestors, class/id tokens)
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
        rep_links[rep_ids[i]] += <double>X[i, C_LINK_DENSITY] * words[i]
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
        X[i, C_BIAS] = 1.0
        X[i, C_POSITION] = (1.0 if i == n - 1 else <double>i * step) if n > 1 else 0.0
        X[i, C_PPL_VS_PAGE] = (<float>rel[i] - page_ppl) if scored[i] else 0.0
        X[i, C_PPL_RANK] = ppl_rank[i]
        X[i, C_PAGE_IN_PRIMARY] = <float>in_primary / <float>n
        X[i, C_LOG_PAGE_BLOCKS] = log1p(<double>n) / 8
        X[i, C_WORDS_RANK] = words_rank[i]
        X[i, C_WORD_SHARE] = words[i] / total
        X[i, C_LOG_SIBLINGS] = log_sib[i]
        X[i, C_LOG_REPEATS] = log_rep[i]
        X[i, C_REPEAT_WORD_SHARE] = rep_words[rep_ids[i]] / total
        s = rep_words[rep_ids[i]]
        X[i, C_REPEAT_LINK_DENSITY] = rep_links[rep_ids[i]] / (s if s > 1.0 else 1.0)
        X[i, C_PAGE_REPEAT_SHARE] = page_repeat
        X[i, C_PAGE_LM] = 1.0 if page_lm else 0.0
        for j in range(WORD_EDGES.shape[0] + 1):
            X[i, C_WORDS_BIN + j] = 0.0
        for j in range(LINK_EDGES.shape[0] + 1):
            X[i, C_LINK_BIN + j] = 0.0
        for j in range(PPL_EDGES.shape[0] + 1):
            X[i, C_PPL_BIN + j] = 0.0
        X[i, C_WORDS_BIN + _bin(words[i], WORD_EDGES)] = 1.0
        X[i, C_LINK_BIN + _bin(<double>X[i, C_LINK_DENSITY], LINK_EDGES)] = 1.0
        if scored[i]:
            X[i, C_PPL_BIN + _bin(rel[i], PPL_EDGES)] = 1.0
        for k in range(N_SHIFTS):
            for j in range(N_NEIGHBOUR):
                X[i, C_NEIGHBOURS + N_NEIGHBOUR * k + j] = (X[i + SHIFT[k], NEIGH[j]] if 0 <= i + SHIFT[k] < n
                                                            else 0.0)
        lo = i - WINDOW if i > WINDOW else 0
        hi = i + WINDOW if i + WINDOW < n - 1 else n - 1
        for j in range(N_NEIGHBOUR):
            s = 0.0
            for k in range(lo, hi + 1):
                s += X[k, NEIGH[j]]
            X[i, C_WINDOW + j] = s / (hi - lo + 1)


cdef dict _HASHES = {}  # token -> its hashed index (a site's pages repeat the same few)


cdef Py_ssize_t _hash(str token) except -1:
    cdef object value = _HASHES.get(token)
    if value is None:
        if len(_HASHES) > 200_000:
            _HASHES.clear()
        value = _HASHES[token] = zlib.crc32(token.encode("utf-8")) % HASH_DIM
    return value


def hashed_tokens(list blocks, list in_primary):
    """Hashed indices (sorted, in HASH_DIM) of each block's tag, tag path, parent and class/id tokens, and its tag
    with whether resiliparse kept it (``in_primary``, 0.0 or 1.0 per block)."""
    cdef Py_ssize_t i
    cdef list hashed = [], indices, tokens
    cdef dict seen = {}  # blocks of one element (and look-alikes) share their tokens
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
                found.add(_hash(token))
            indices = seen[key] = sorted(found)
        hashed.append(indices)
    return hashed
