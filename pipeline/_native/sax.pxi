# libxml2's HTML parser driving the parser target (parse.pxi) with our own SAX callbacks: the events lxml's
# ``fromstring(html, HTMLParser(target=..., encoding="utf-8"))`` delivers, without lxml's Python calls, attribute dicts
# and tag strings per event. libxml2's functions are looked up once, in lxml's etree module; where one is missing the
# module does not import (the block stage has no other parser).

cdef extern from *:
    """
    static __thread void *warcplex_sax_target = NULL;  /* the BlockTarget of the parse running on this thread */
    """
    void *warcplex_sax_target

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

# lxml.etree.HTMLParser's options (recover, no network, compact; a default doctype), as parse.parse_tree makes it.
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


if not _find_libxml2():
    raise ImportError("libxml2's SAX functions are not exported by lxml.etree: the block parse cannot run")


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
        target._start(<str> tag.name, tag.flags, atts)
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
    events lxml's ``fromstring(html, HTMLParser(target=target, encoding="utf-8"))`` delivers."""
    global warcplex_sax_target
    cdef void *context
    cdef void *doc
    cdef void *outer = warcplex_sax_target
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

