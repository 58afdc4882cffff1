# The depth guard's scan: how deep a page's elements nest, estimated from its tags without parsing it (resiliparse's
# main-content pass crawls on a page nested thousands deep; pipeline.steps.extractors.ResiliparseExtractor asks first).

# Void elements and elements whose end tag is commonly omitted do not deepen the estimate.
FLAT_TAGS = frozenset("area base br col embed hr img input link meta param source track wbr "
                      "p li dt dd tr td th option thead tbody tfoot colgroup rp rt".split())


cdef inline unsigned long long _pack(Py_UCS4 c, unsigned long long key, Py_ssize_t position) noexcept:
    """``key`` with the lower-cased ASCII letter or digit ``c`` as its byte at ``position``."""
    cdef unsigned long long code = <unsigned long long> c
    if 65 <= code <= 90:  # A-Z
        code += 32
    return key | (code << (8 * position))


@cython.final
cdef class DepthScan:
    """The scan, for the tags that do not deepen the estimate (``flat_tags``: at most 64 names of at most 8 letters,
    each name's letters packed into one integer)."""

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

    cdef bint _flat(self, unsigned long long key) noexcept:
        cdef Py_ssize_t j
        for j in range(self.n_flat):
            if self.flat_keys[j] == key:
                return True
        return False

    def depth(self, str html, Py_ssize_t stop_above):
        """The deepest count of open tags (``<name`` up, ``</name`` down, the
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



cdef DepthScan _DEPTH = DepthScan(FLAT_TAGS)


def nesting_depth(str html, Py_ssize_t stop_above):
    """Estimated element nesting depth of ``html`` from its tags (``<name`` one deeper, ``</name`` one shallower,
    FLAT_TAGS neither); stops once above ``stop_above`` (0 where it has no more tags than that)."""
    return _DEPTH.depth(html, stop_above)
