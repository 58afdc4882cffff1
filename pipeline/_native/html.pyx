# cython: language_level=3
"""The block stage's compiled module, its one implementation, a file a concept:

==============  =================================================================================================
file            holds
==============  =================================================================================================
html.pxd        its C interface: libxml2's SAX API, the parser target's and the depth scan's state
parse.pxi       the block parse: the tag sets and rules (INLINE, SKIP, ..., excluded_part, names_comments), the
                parser target (BlockTarget) and the structure heuristics' candidates (Nodes)
sax.pxi         libxml2's HTML parser driving the target with our own callbacks (parse_html)
words.pxi       word_count, a block's text and lines (break_lines, block_text), where a space is written (separates)
features.pxi    the dense feature matrix (page_rows), by the column table of columns.py, and hashed_tokens
context.pxi     the second stage's features (context_rows)
depth.pxi       the depth guard's tag scan (nesting_depth)
==============  =================================================================================================

What a parse returns (Block, Markup, Nodes) is declared in :mod:`pipeline._native.parsed`, the feature columns in
:mod:`pipeline._native.columns`; the block stage (:mod:`pipeline.steps.blocks`) calls this module through
:mod:`~pipeline.steps.blocks.parse` and :mod:`~pipeline.steps.blocks.features`. tests/test_block_fixtures.py pins its
output on the real pages of tests/data.
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
include "words.pxi"
include "parse.pxi"
include "sax.pxi"
include "features.pxi"
include "context.pxi"
include "depth.pxi"
