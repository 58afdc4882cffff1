# cython: language_level=3
# What the compiled modules of pipeline._native share: CPython's string API they call directly, the fused types
# their text writers and sums are made for, str's character classes with the ASCII answers inline, and numpy's
# pairwise summation. Each module that cimports this file gets its own copy of these inline functions.

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_FindChar(object text, Py_UCS4 ch, Py_ssize_t start, Py_ssize_t end, int direction) except -2
    int PyUnicode_KIND(object text)
    void *PyUnicode_DATA(object text)
    Py_UCS4 PyUnicode_READ(int kind, void *data, Py_ssize_t index) noexcept
    bint PyUnicode_IS_ASCII(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    bint Py_UNICODE_ISLOWER(Py_UCS4 c) noexcept
    object PyUnicode_DecodeASCII(const char *data, Py_ssize_t size, const char *errors)


ctypedef fused out_char:  # what the compiled text functions write: an ASCII text a byte a character, others UCS4
    char
    Py_UCS4


ctypedef fused real:
    float
    double


cdef inline bint is_unspaced(Py_UCS4 c) noexcept:
    """A character of a script written without spaces (parse.UNSPACED)."""
    return ((0x3040 <= c <= 0x30ff) or (0x3400 <= c <= 0x4dbf) or (0x4e00 <= c <= 0x9fff)
            or (0xf900 <= c <= 0xfaff) or (0x0e00 <= c <= 0x0eff) or (0x1000 <= c <= 0x109f)
            or (0x1780 <= c <= 0x17ff))


# str's character classes, with the ASCII answers inline (Python's own tables answer the rest).
cdef inline bint is_alpha(Py_UCS4 c) noexcept:
    return (u'a' <= c <= u'z') or (u'A' <= c <= u'Z') if c < 128 else c.isalpha()


cdef inline bint is_upper(Py_UCS4 c) noexcept:
    return u'A' <= c <= u'Z' if c < 128 else c.isupper()


cdef inline bint is_decimal(Py_UCS4 c) noexcept:
    return u'0' <= c <= u'9' if c < 128 else c.isdecimal()


cdef inline bint is_alnum(Py_UCS4 c) noexcept:
    return (u'a' <= c <= u'z') or (u'A' <= c <= u'Z') or (u'0' <= c <= u'9') if c < 128 else c.isalnum()


cdef inline bint is_ascii_letter(Py_UCS4 c) noexcept:
    return (u'a' <= c <= u'z') or (u'A' <= c <= u'Z')


cdef inline real pairwise(const real *a, Py_ssize_t n) noexcept nogil:
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
    return pairwise(a, n2) + pairwise(a + n2, n - n2)
