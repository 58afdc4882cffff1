# Words and lines: how many words a text has, a block's text and its lines from the runs of text the parse collected,
# and where a space is written between two runs.

# A ``br`` in a block's collected text (break_lines): never in a document's text, which libxml2 ends at NUL.
BREAK = "\x00"
# What is never written with a space before (closing punctuation) or after (opening punctuation) it (separates), nor
# next to it: a script written without spaces (is_unspaced), East Asian punctuation and full-width forms.
_CLOSING = frozenset(".,;:!?)]}%\u2026\u2019\u201d\u00bb")
_OPENING = frozenset("([{\u2018\u201c\u00ab\u00bf\u00a1")
_CURRENCY = frozenset("$\u20ac\u00a3\u00a5\u20b9")  # a price starts a new word
_AFTER_JUNCTION = frozenset(".!?,;:)%")  # sentence punctuation a new word may follow at a junction


def word_count(str text):
    """Words of ``text``: white-space separated, plus one per two characters of CJK, Thai, Lao, Burmese and Khmer
    (is_unspaced), which are written without spaces; at least one."""
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


cdef inline bint _east_asian(Py_UCS4 c) noexcept:
    return is_unspaced(c) or (0x3000 <= c <= 0x303f) or (0xff00 <= c <= 0xffef)


def separates(str before, str after, bint junction=False):
    """Whether what stands between the text ``before`` and the text ``after`` of one block (both non-empty) is a
    space: a rendered element the parse skips (not UNSEEN) or, ``junction``, the end of an inline element and the start
    of the next (neither UNJOINED). Never where white space already separates them, before closing or after opening
    punctuation (`Python<svg/>.` reads "Python."), or next to a script written without spaces or East Asian
    punctuation (an icon after a linked term in Chinese). A junction only after a small letter, a digit or sentence
    punctuation, and where a new word visibly starts: a capitalised word, a digit after a letter or a currency sign
    (`Part</span><span>Lifetime`, `was</span><s>$540`); not inside a word marked up piece by piece
    (`cl</b></i><i><b>és`, `NA</b><b>SA`) nor in code (`json.</span><span>JSONDecoder`,
    `skipkeys</span><span>=</span><span>False`)."""
    cdef Py_UCS4 last = before[len(before) - 1], first = after[0]
    if (last.isspace() or first.isspace() or first in _CLOSING or last in _OPENING
            or _east_asian(last) or _east_asian(first)):
        return False
    if junction:
        return ((last.islower() or last.isdigit() or last in _AFTER_JUNCTION)
                and ((first.isupper() and not after[1:2].isupper()) or first in _CURRENCY
                     or (first.isdigit() and last.isalpha())))
    return True


cdef _settle_separator(_Owner owner, str text):
    """Before ``text`` joins the parts of ``owner`` after a separator (``owner.separator``): note a written space
    before it in ``owner.spaces`` where separates says so."""
    if separates(<str> owner.parts[len(owner.parts) - 1], text, owner.separator == JUNCTION):
        if owner.spaces is None:
            owner.spaces = []
        owner.spaces.append(len(owner.parts))
    owner.separator = 0


cpdef tuple break_lines(str text, bint preformatted):
    """A block's collected text, with BREAK where a ``br`` was, as the block's text (white space collapsed, each break
    a space: what the features read) and its lines (Block.lines, when two or more; the block stage writes them one per
    line). Blank lines are left out. ``preformatted`` (inside a PREFORMATTED element): a line break is one too, and
    each line keeps its spacing and indentation; otherwise a line's white space is collapsed, and a line that starts
    with a lower-case letter goes on the line before it: that ``br`` wraps a sentence (``track attendance,<br>simplify
    pay``)."""
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
    """A block's text from its collected ``parts`` (break_lines: what the features read) and its lines as written:
    ``spaces`` are the indices of the parts a space goes before (separates), and where they change the text, the
    written lines are given even when there is only one (Block.lines)."""
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



def joined_words(str text):
    """``" ".join(text.split())``, without the list of words."""
    return _joined_words([text])

