# cython: language_level=3
"""Text kernels, compiled: the LM line and token count (:func:`lm_line`, the one implementation of the LM tokens that
:mod:`pipeline.steps.normalize` gives training and scoring), the perplexity filter's pooling
(:mod:`pipeline.steps.perplexity`), the corpus stages' normalisation and quality signals
(:mod:`pipeline.corpus.normalize`, :mod:`pipeline.corpus.signals`) and the scan for format characters
(:mod:`pipeline.document`), computing exactly what their Python reference computes (``tests/test_native.py``).
Each rule's tables (characters and their kinds, character sets) are handed in by the module that owns the rule."""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.unicode cimport PyUnicode_4BYTE_KIND, PyUnicode_FromKindAndData
from libc.math cimport log10, pow
from libc.string cimport memset

import unicodedata

from pipeline._native.common cimport PyUnicode_DecodeASCII, PyUnicode_IS_ASCII, is_alnum, is_decimal, out_char

include "version.pxi"


cdef inline bint _lm_cjk(Py_UCS4 c) noexcept:
    """A character that is one LM token by itself (normalize._CJK)."""
    return ((0x3040 <= c <= 0x30ff) or (0x3400 <= c <= 0x4dbf) or (0x4e00 <= c <= 0x9fff)
            or (0xf900 <= c <= 0xfaff) or (0xac00 <= c <= 0xd7af))


cdef object _nfkc = unicodedata.normalize


def lm_line(str text):
    """The LM's line of ``text`` and its token count: NFKC, lower-cased, decimal digits to 0, then
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
        elif is_decimal(c):
            c = u'0'
        if c.isspace():
            in_run = False
            continue
        if (is_alnum(c) or c == u'_') and not _lm_cjk(c):
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


# The perplexity filter's pooling (pipeline.steps.perplexity): the same float operations in the same order
# as its Python (Python 3.11's sum() of floats adds left to right in a double, from the first term).

cdef inline double _log_term(double perplexity, Py_ssize_t n_tokens) noexcept:
    """perplexity._log_term of a scored unit: (tokens + 1) * log10(max(perplexity, 1.0))."""
    return <double> (n_tokens + 1) * log10(1.0 if 1.0 > perplexity else perplexity)


_new_tuple = tuple.__new__  # a NamedTuple made without its Python-level __new__


def judge(list units, bint by_line, bint windowed, Py_ssize_t window_tokens, unit_type):
    """perplexity_rule.Judgement's ``groups``, ``judged`` and ``scores`` of ``units`` (perplexity_rule.Unit tuples:
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
        for i in range(m):  # each pooled unit with its nearest neighbours, both sides in turn
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
