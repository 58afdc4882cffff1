# cython: language_level=3
# The block stage's compiled module (html.pyx and the files it includes, one a concept): its C interface, the state of
# its parser target and of the depth guard's scan. What Python sees of it is html.pyx's docstring.

from cpython.ref cimport PyObject

# libxml2's HTML parser, driven with our own SAX callbacks (sax.pxi): the library inside lxml's etree module, whose
# symbols are looked up at run time (lxml links libxml2 statically and exports its API), so the parser is the very
# one lxml runs.
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

cdef extern from "strings.h":
    int strcasecmp(const char *a, const char *b) nogil


# --- parse.pxi: the parser target -------------------------------------------------------------------------------

cdef enum:
    TAG_SLOTS = 1024  # the tag table's slots (a power of two)
    TAG_KEY = 32  # the longest name it holds, with its NUL
    TAG_CACHED = 512  # the names it holds at most
    MAX_COUNTED = 32  # COUNTED_TAGS holds at most this many names

cdef struct _Tag:
    char key[TAG_KEY]  # the name as libxml2 gives it, NUL-terminated; empty: a free slot
    PyObject *name  # the name as str (a reference the table holds for its life)
    int flags  # its TAG_* bits
    int counted  # its place in COUNTED_TAGS (-1: none)


cdef class _TagTable:
    """The element names met so far with their TAG_* bits: an open addressing table."""
    cdef const char *counted_names[MAX_COUNTED]
    cdef Py_ssize_t n_counted, held
    cdef _Tag slots[TAG_SLOTS]
    cdef _Tag uncached  # the answer for a name the table does not hold (valid until the next lookup)
    cdef int _fill(self, _Tag *slot, const char *name, Py_ssize_t length) except -1
    cdef _Tag *entry(self, const char *name) except NULL


cdef class _ClassId:
    """An element's class and id value: its tokens, their prefixed forms by level, whether they name comments."""
    cdef tuple tokens
    cdef list by_level
    cdef bint comment
    cdef tuple prefixed(self, Py_ssize_t level)


cdef class _Owner:
    """A block-level element on the parser's stack, collecting its runs of text, and its text lengths for the
    structure heuristics (Nodes)."""
    cdef Py_ssize_t element, depth, parent, link
    cdef bint excluded, preformatted, comment
    cdef Py_ssize_t own_text, children, bearing, longest, second, choice_first, choice_last
    cdef double total, squares
    cdef bint breaks  # a br among its parts (BREAK), or a line break when preformatted
    cdef int separator  # SKIPPED or JUNCTION after its last part (separates decides), or 0
    cdef list spaces  # the parts a written space goes before (block_text), or None
    cdef str tag
    cdef tuple ancestors
    cdef tuple levels  # the _ClassId of the element and of its three nearest block-level ancestors (None: no tokens)
    cdef list parts
    cdef tuple _attrs
    cdef tuple attrs(self)


cdef class _Group:
    """One group of the list selection (depth, tag, class/id words): its occurrences, text length and the preorder
    ranges of its elements."""
    cdef Py_ssize_t count, length
    cdef list ranges


cdef class BlockTarget:
    """libxml2's SAX events -> blocks (Block), the page's Markup and the structure heuristics' candidates."""
    cdef list blocks, owners, tags, opened, links
    cdef Py_ssize_t element, skip
    cdef readonly object markup  # a Markup, complete after close()
    cdef bint in_json_ld, in_title, junction  # junction: an inline element has just ended (nothing since)
    cdef bint edit_section  # the element opening is MediaWiki's edit link (_edit_section)
    cdef bint seo_metadata  # the element opening is a reviews widget's SEO metadata list (_seo_metadata)
    cdef bint skip_head  # the skipped subtree is the head's
    cdef bint skip_menu  # the skipped subtree is a MENUS element's (a main element inside ends it)
    cdef Py_ssize_t https_links, http_links, data_attributes, aria_attributes
    cdef Py_ssize_t tag_counts[MAX_COUNTED]  # COUNTED_TAGS' start tags
    cdef _TagTable table
    cdef Py_ssize_t most_bearing, most_children_depth, leaf_text, leaf_parent, leaf_parent_depth, deepest
    cdef Py_ssize_t most_first, most_last, leaf_first, leaf_last, article_first, article_last
    cdef dict groups
    cdef public bint nodes  # compute the structure heuristics' candidates
    cdef dict class_ids  # class and id values -> their _ClassId (None: no tokens), at most ATTR_CACHE_SIZE
    cdef object error  # raised inside a libxml2 callback (parse_html)
    cdef _flush(self, _Owner owner)
    cdef _push(self, str tag, object owner, bint in_link)
    cdef _start(self, str tag, int flags, const xmlChar **atts)
    cdef bint _read_attributes(self, int flags, const xmlChar **atts) except -1
    cdef object _class_id(self, str class_id)
    cdef tuple _block_attributes(self, const xmlChar **atts)
    cdef bint _excluded(self, str tag, int flags, object role, object modal) except -1
    cdef _end(self, str tag, int flags)
    cdef _data(self, str text)
    cdef _closed(self, _Owner owner)
    cdef _nodes(self, nodes)


# --- features.pxi ------------------------------------------------------------------------------------------------

cdef enum:
    GRAM_BITS = 17  # bits of the filter of the primary text's 4-grams
    GRAM_WORDS = 2048  # 2 ** GRAM_BITS / 64

cdef class _Grams:
    """The 4-grams of a text in a bit filter."""
    cdef unsigned long long bits[GRAM_WORDS]
    cdef bint maybe_in(self, str text)


# --- depth.pxi ---------------------------------------------------------------------------------------------------

cdef class DepthScan:
    """The depth guard's tag scan, for the tags that do not deepen the estimate (FLAT_TAGS)."""
    cdef unsigned long long flat_keys[64]
    cdef Py_ssize_t n_flat
    cdef bint _flat(self, unsigned long long key) noexcept
