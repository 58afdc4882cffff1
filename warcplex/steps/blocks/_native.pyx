# cython: language_level=3
"""Compiled block stage: the parser target of :mod:`~warcplex.steps.blocks.parse`, the per-block
text features of :mod:`~warcplex.steps.blocks.features` and the tree walk of
:mod:`~warcplex.steps.blocks.model`, computing exactly what their Python reference code computes
(``tests/test_blocks_native.py`` pins block-level agreement). Loaded by
:mod:`warcplex.steps.blocks.native`, which falls back to the Python code when it is missing.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.unicode cimport PyUnicode_4BYTE_KIND, PyUnicode_FromKindAndData
from libc.math cimport log1p

import unicodedata

import numpy as np

# Bumped whenever what this module computes changes; native.py refuses a module of another version.
VERSION = 2

cdef frozenset INLINE = frozenset("a abbr acronym b bdi bdo big cite code data del dfn em font i ins kbd label mark "
                                  "nobr q s samp small span strike strong sub sup time tt u var wbr".split())
cdef frozenset SKIP = frozenset("script style template head title meta link iframe svg canvas object embed select "
                                "option button input textarea nav math".split())
cdef frozenset HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
cdef frozenset LIST_ITEMS = frozenset("li dt dd".split())
cdef frozenset CELLS = frozenset("td th".split())
cdef frozenset CODE = frozenset("pre code".split())
cdef str ENDS_SENTENCE = ".!?:;\"'\u201d)\u3002\uff01\uff1f\u300d\u300f"


cdef inline bint _unspaced(Py_UCS4 c) noexcept:
    """A character of a script written without spaces (features._UNSPACED)."""
    return ((0x3040 <= c <= 0x30ff) or (0x3400 <= c <= 0x4dbf) or (0x4e00 <= c <= 0x9fff)
            or (0xf900 <= c <= 0xfaff) or (0x0e00 <= c <= 0x0eff) or (0x1000 <= c <= 0x109f)
            or (0x1780 <= c <= 0x17ff))


cdef inline bint _lm_cjk(Py_UCS4 c) noexcept:
    """A character that is one LM token by itself (normalize._CJK)."""
    return ((0x3040 <= c <= 0x30ff) or (0x3400 <= c <= 0x4dbf) or (0x4e00 <= c <= 0x9fff)
            or (0xf900 <= c <= 0xfaff) or (0xac00 <= c <= 0xd7af))


def lm_line(str text):
    """normalize.normalize_for_lm and the token count: NFKC, lower-cased, decimal digits to 0, then
    a token per CJK character, per run of other word characters and per other non-space character."""
    cdef str norm = unicodedata.normalize("NFKC", text).lower()
    cdef Py_ssize_t n = len(norm), length = 0, tokens = 0
    cdef Py_UCS4 c
    cdef bint in_run = False
    cdef Py_UCS4 *buf = <Py_UCS4 *> PyMem_Malloc((2 * n + 1) * sizeof(Py_UCS4))
    if buf == NULL:
        raise MemoryError()
    try:
        for c in norm:
            if c.isdecimal():
                c = u'0'
            if c.isspace():
                in_run = False
                continue
            if (c.isalnum() or c == u'_') and not _lm_cjk(c):
                if in_run:
                    buf[length] = c
                    length += 1
                    continue
                in_run = True
            else:
                in_run = False
            if tokens:
                buf[length] = u' '
                length += 1
            buf[length] = c
            length += 1
            tokens += 1
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, length), tokens
    finally:
        PyMem_Free(buf)


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


@cython.boundscheck(False)
@cython.wraparound(False)
def base_rows(list blocks, str primary, list log_ppl, float[:, ::1] out):
    """features._base of every block into the rows of ``out`` (n x len(BASE), float32)."""
    cdef Py_ssize_t i, n_chars, spaced, unspaced, punct, letters, digits, title, n_words
    cdef bint in_word, scored
    cdef Py_UCS4 c
    cdef double ppl
    cdef str text, tag
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
                if c.isupper():
                    title += 1
            if c.isalpha():
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
        out[i, 0] = log1p(<double>n_words)
        out[i, 1] = <double>block.link_chars / n_chars
        out[i, 2] = 1.0 if primary and text in primary else 0.0
        out[i, 3] = 1.0 if text[n_chars - 1] in ENDS_SENTENCE else 0.0
        out[i, 4] = min(1.0, <double>punct / n_words)
        out[i, 5] = <double>digits / n_chars
        out[i, 6] = <double>title / n_words
        out[i, 7] = ppl if scored else 0.0
        out[i, 8] = 0.0 if scored else 1.0
        out[i, 9] = min(<double>block.depth, 30.0) / 30
        out[i, 10] = <double>letters / n_chars
        out[i, 11] = <double>(spaced - 1) / n_chars
        out[i, 12] = 1.0 if tag in HEADINGS else 0.0
        out[i, 13] = 1.0 if tag in LIST_ITEMS else 0.0
        out[i, 14] = 1.0 if tag in CELLS else 0.0
        out[i, 15] = 1.0 if tag in CODE or "pre" in block.ancestors else 0.0


@cython.boundscheck(False)
@cython.wraparound(False)
def tree_leaves(const double[:, ::1] D, const Py_ssize_t[:, ::1] feature, const double[:, ::1] cut, int depth):
    """model.TreeEnsemble.raw's walk: the leaf (0 .. 2**depth - 1) each row reaches in each tree."""
    cdef Py_ssize_t n = D.shape[0], n_trees = feature.shape[0], width = feature.shape[1]
    cdef Py_ssize_t r, t, node, level
    leaves = np.empty((n, n_trees), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] out = leaves
    with nogil:
        for r in range(n):
            for t in range(n_trees):
                node = 0
                for level in range(depth):
                    node = 2 * node + 1 + (D[r, feature[t, node]] > cut[t, node])
                out[r, t] = node - width
    return leaves


cdef class _Owner:
    """parse._Owner: a block-level element on the parser's stack, collecting its runs of text."""

    cdef public Py_ssize_t element, depth, parent, link
    cdef public str tag
    cdef public tuple ancestors, levels
    cdef public list parts
    cdef tuple _attrs

    def __init__(self, Py_ssize_t element, str tag, tuple ancestors, tuple levels, Py_ssize_t depth,
                 Py_ssize_t parent):
        self.element, self.tag, self.ancestors, self.levels, self.depth = element, tag, ancestors, levels, depth
        self.parent = parent
        self.parts = []
        self.link = 0
        self._attrs = None

    @property
    def attrs(self):
        cdef Py_ssize_t level
        if self._attrs is None:
            self._attrs = tuple([f"{level}:{t}" for level, tokens in enumerate(self.levels) for t in tokens])
        return self._attrs


cdef class BlockTarget:
    """parse._BlockTarget, compiled: the HTML parser's events -> blocks (``block_class`` objects)."""

    cdef public list blocks, owners, stack
    cdef public Py_ssize_t element, skip
    cdef object block_class, attr_tokens

    def __init__(self, block_class, attr_tokens):
        self.block_class, self.attr_tokens = block_class, attr_tokens
        self.blocks, self.owners, self.stack = [], [], []
        self.element = -1
        self.skip = 0

    cdef _flush(self, _Owner owner):
        cdef str text
        cdef Py_ssize_t link
        if owner.parts:
            text = " ".join("".join(owner.parts).split())
            if text:
                link = owner.link if owner.link < len(text) else len(text)
                self.blocks.append(self.block_class(text, owner.element, owner.tag, owner.ancestors, owner.attrs,
                                                    link, owner.depth, owner.parent))
            owner.parts = []
            owner.link = 0

    def start(self, tag, attrib):
        cdef _Owner owner, child
        cdef bint in_link
        self.element += 1
        if self.skip:
            self.skip += 1
            return
        if tag in SKIP:
            self.skip = 1
            return
        in_link = bool(self.stack) and self.stack[-1][2]
        if not self.owners:
            if tag == "body":
                owner = _Owner(self.element, tag, (), (), 0, -1)
                self.owners.append(owner)
                self.stack.append((tag, owner, False))
            else:
                self.stack.append((tag, None, False))
            return
        owner = self.owners[-1]
        if tag in INLINE:
            self.stack.append((tag, None, in_link or tag == "a"))
        elif tag == "br":
            owner.parts.append(" ")
            self.stack.append((tag, None, in_link))
        else:
            self._flush(owner)
            child = _Owner(self.element, tag, (owner.tag, *owner.ancestors)[:4],
                           (self.attr_tokens(attrib), *owner.levels[:3]), owner.depth + 1, owner.element)
            self.owners.append(child)
            self.stack.append((tag, child, False))

    def end(self, tag):
        cdef list stack = self.stack
        cdef tuple entry
        if self.skip:
            self.skip -= 1
            return
        if not stack:
            return
        if (<tuple>stack[-1])[0] != tag:
            for entry in stack:
                if entry[0] == tag:
                    break
            else:
                return  # an end tag the parser never opened
        while stack:
            entry = stack.pop()
            if entry[1] is not None:
                self._flush(entry[1])
                self.owners.pop()
            if entry[0] == tag:
                return

    def data(self, text):
        cdef _Owner owner
        if self.skip or not self.owners:
            return
        owner = self.owners[-1]
        owner.parts.append(text)
        if (<tuple>self.stack[-1])[2]:
            owner.link += len(text)

    def close(self):
        while self.owners:
            self._flush(self.owners.pop())
        return self.blocks
