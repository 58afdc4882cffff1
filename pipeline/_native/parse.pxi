# The block parse: libxml2's SAX events (sax.pxi) -> the page's text blocks in document order, what its markup says
# (Markup) and the main-content candidates of the structure heuristics (Nodes). Every rule of it is here, once.

import re

from pipeline._native.parsed import COUNTED_TAGS, NO_NODE, Block, Markup

INLINE = frozenset("a abbr acronym b bdi bdo big cite code data del dfn em font i ins kbd label mark nobr q "
                   "s samp small span strike strong sub sup time tt u var wbr".split())
# Subtrees never read. `video` and `audio`, like `canvas` and `object`: their text is what a browser that cannot play
# them shows ("Your browser does not support the video tag."). Not `form` (whole pages are often wrapped in one) nor
# `noscript` (the HTML parser nests the rest of the page inside one whose end tag it ignores): their text goes to the
# classifier like any other.
SKIP = frozenset("script style template head title meta link iframe svg canvas object embed video audio select "
                 "option button input textarea nav math".split())
# Skipped elements that a parser may leave open round the rest of the page: libxml2 ignores `</button>` or `</nav>`
# while a `div` inside is open (its end tags cannot close a `div`), where a browser closes both, so a menu button with
# one unclosed `div` (Dotdash Meredith's sites) or a menu bar holds the whole page. HTML allows a `main` element only
# under `html`, `body`, `div` and `form`, so one inside them is such a page: from it on, the page is read again.
MENUS = frozenset(("button", "nav"))
# Skipped elements a browser shows nothing of. Every other one (a form control, an embedded object, an icon, a menu)
# stands between the words around it (separates): `<label>XS</label><input><label>S</label>` is written "XS S", where
# the words would otherwise run together ("XSS"). So may the junction of two inline elements, where a page's style sets
# them apart (badges, buttons, tags: `<span>Genuine Part</span><span>Lifetime</span>`). Only the written text has these
# spaces (block_text): the features read the words as the classifier was fitted on them.
UNSEEN = frozenset("script style template head title meta link".split())
# Inline elements whose junction with another is never a word boundary: exponents, indices, footnote marks (`n<sup>2`).
UNJOINED = frozenset(("sup", "sub"))
# Elements whose text keeps its line breaks and indentation (code, poems, ASCII tables), and so every block inside.
PREFORMATTED = frozenset(("pre", "listing", "xmp", "plaintext"))
HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
# A `div` right inside a heading is the heading's text, and its block is the heading's (GitBook's and other Tailwind
# sites' `<h3><div>anchor</div><div>About this book</div></h3>`).
HEADING_PARTS = frozenset(("div",))
# Parts of a page that are not its content whatever their text says: the page's footer, modal dialogs (cookie and
# sign-up pop-ups, a privacy policy in a modal) and menus. Their blocks are parsed and classified like any other, so
# the page the classifier sees is the one it was fitted on, and never kept (rules.revise; README, "Parts never kept").
# A `footer` is the page's outside these elements (HTML's rule for its contentinfo role); inside one it is an
# article's or a section's footer, which sites also fill with content.
SECTIONS = frozenset("article aside main nav section".split())
# The tags of such parts; any other element is one only by its role or aria-modal attribute.
EXCLUDED_TAGS = frozenset(("footer", "dialog"))
# ARIA roles of such parts: a navigation (`nav`'s, whose subtree SKIP skips), the page's footer, a menu, a dialog.
EXCLUDED_ROLES = frozenset("navigation contentinfo menu menubar dialog alertdialog".split())
# Class and id words of the elements that hold reader comments, replies and reviews (WordPress's `comment-list`,
# `comment-body` and `respond`, Disqus's `disqus_thread`, `komentarze`, `user-reviews`): a block inside one is in a
# comment region (Block.comment_region), where the comment detector (pipeline.steps.blocks.comments) tells comments
# from the page's own text (a forum's posts, a review the page is about).
COMMENT_STEMS = ("comment", "koment", "komment", "coment")  # anywhere in a word: `commentlist`, `fbcomments`
COMMENT_PREFIXES = ("review",)  # at a word's start: `reviews`, `reviewbody`, but not `preview`
COMMENT_WORDS = frozenset("reply replies respond responses discussion discussions disqus talkback".split())
# Seed 004's list selection takes the group of the highest average text length among the groups of this many highest
# scores R.
LIST_CANDIDATES = 3
# Class and id values -> their tokens: a page's elements, and a site's pages, repeat the same few. At most this many
# are held.
ATTR_CACHE_SIZE = 50_000
SKIPPED, JUNCTION = 1, 2  # what stands between a block's last part and its next text (_Owner.separator)
# A heading's or a definition's permalink ends its block's text (Sphinx's and MkDocs' `<a class="headerlink">¶</a>`,
# rustdoc's `Variants<a class="anchor">§</a>`) or, rustdoc's section sign, starts it right before a word
# (`<a class="doc-anchor">§</a>Examples`): not written (the features read it, as the classifier was fitted on them).
# A section sign before a number or a space (`§ 242 BGB`, `§3`) is a citation and stays.
SECTION_SIGN = "\u00a7"
PERMALINKS = ("\u00b6", SECTION_SIGN)
PERMALINK_MOJIBAKE = "\u00c2"  # before the sign on a page whose text was encoded twice (`Â¶`: its UTF-8 read as cp1252)
# rustdoc's link to the source of an item, a block of its own before the item's heading, after the version it is stable
# since: `<span class="since">1.0.0 (const: 1.48.0)</span> · <a class="src">Source</a>`. Read, not written, like a
# permalink (a page of a type's methods writes it a hundred times).
SOURCE_LINK = re.compile(r"(?:\d+(?:\.\d+)+(?: \(const: (?:\d+(?:\.\d+)+|unstable)\))? · )?Source")

_TOKEN_SPLIT = re.compile(r"[^a-z]+")


cdef inline bint _leading_permalink(str text):
    """Whether ``text`` starts with rustdoc's permalink: a section sign right before a letter."""
    return text.startswith(SECTION_SIGN) and len(text) > 1 and text[1].isalpha()


cdef inline bint _has_permalink(str text):
    """Whether a block's text ends with a permalink or starts with rustdoc's (_without_permalink has work)."""
    return text.endswith(PERMALINKS) or _leading_permalink(text)


cdef tuple _without_permalink(tuple lines):
    """A block's written ``lines`` without the permalink that ends the last one (and the space before it) or starts
    the first; the same line where it is all that line holds."""
    cdef str first = <str> lines[0], last
    if _leading_permalink(first):
        lines = (first[1:],) + lines[1:]
    last = <str> lines[len(lines) - 1]
    if not last.endswith(PERMALINKS):
        return lines
    last = last[:len(last) - 1]
    if last.endswith(PERMALINK_MOJIBAKE):
        last = last[:len(last) - 1]
    last = last.rstrip()
    return lines[:len(lines) - 1] + (last,) if last else lines


cdef inline bint _source_link(tuple lines):
    """Whether a block's written ``lines`` are one line that is rustdoc's source link (SOURCE_LINK)."""
    cdef str line
    if len(lines) != 1:
        return False
    line = <str> lines[0]
    return line.endswith("Source") and SOURCE_LINK.fullmatch(line) is not None


cdef inline bint _edit_section(const char *class_value):
    """Whether an element's class value is that of MediaWiki's edit links after a section's heading (`<span
    class="mw-editsection">[edit]</span>`, `[Bearbeiten | Quelltext bearbeiten]`; `editsection` in older versions):
    a subtree never read, like a SKIP tag's. Not the page's text: a link to a form, in the wiki's language."""
    return (class_value[0] == b'm' and strcmp(class_value, "mw-editsection") == 0
            or class_value[0] == b'e' and strcmp(class_value, "editsection") == 0)


cdef inline bint _seo_metadata(const char *id_value):
    """Whether an element's id is that of Bazaarvoice's SEO metadata list (`<ul id="BVSEOSDK_meta" style="display:
    none !important">`, `BVSEO_meta`), which the reviews widget of many shops' product pages writes: its items are the
    SDK's version, timings and messages (`bvseo-msg: SEO SDK is disabled. ...`), never shown. A subtree never read.
    The reviews it renders for search engines (`bvseo-reviewsSection`) are the page's and are read."""
    return id_value[0] == b'B' and (strcmp(id_value, "BVSEOSDK_meta") == 0 or strcmp(id_value, "BVSEO_meta") == 0)


def names_comments(tuple tokens):
    """Whether an element's class/id words (class_id_tokens) name a comment region."""
    return any(t in COMMENT_WORDS or t.startswith(COMMENT_PREFIXES) or any(s in t for s in COMMENT_STEMS)
               for t in tokens)


def class_id_tokens(str class_id):
    """Lower-cased words (2+ letters) of an element's class and id values joined by a space."""
    if PyUnicode_IS_ASCII(class_id):
        return _ascii_class_id_tokens(class_id)
    return tuple(t for t in _TOKEN_SPLIT.split(class_id.lower()) if len(t) > 1)


def excluded_part(str tag, list open_tags, role, aria_modal):
    """Whether a block-level element opening inside the elements ``open_tags`` (outermost first) is a part of the page
    never kept: the page's footer, a `dialog`, a modal (``aria-modal="true"``) or an element whose role (its first
    token) is one of EXCLUDED_ROLES. Only an element of EXCLUDED_TAGS, or one with a role or an aria-modal attribute,
    can be one (the parser asks only about those)."""
    if tag == "dialog" or (tag == "footer" and not any(name in SECTIONS for name in open_tags)):
        return True
    if role:
        tokens = role.split(None, 1)
        if tokens and tokens[0].lower() in EXCLUDED_ROLES:
            return True
    return aria_modal is not None and aria_modal.strip().lower() == "true"


def article_descends(Py_ssize_t count, double total, double squares, Py_ssize_t longest, Py_ssize_t second):
    """Seed 004's article test of an element whose ``count`` children's text lengths sum to ``total`` (squares to
    ``squares``; the two longest ``longest`` and ``second``): True when the gap between the two longest is at least
    their sample standard deviation (an "indirect" element: the test goes on in the longest child). One child: True;
    none, or no text in them: False. Exact in integers: gap >= sd  <=>  gap^2 n (n-1) >= n squares - total^2."""
    return _article_descends(count, total, squares, longest, second)


def list_choice(groups):
    """Seed 004's list selection over ``groups`` (each ``[occurrences, text length, element ranges]``, in the order
    they were first closed): the ranges of the chosen group, or none. Each group of two or more is scored
    R = 2 x occurrences x text length / (occurrences + text length); of the LIST_CANDIDATES highest, the one of the
    highest average text length."""
    scored = []
    for occurrences, length, ranges in groups:
        if occurrences >= 2 and length > 0:
            scored.append((2.0 * occurrences * length / (occurrences + length), length / occurrences, ranges))
    if not scored:
        return []
    scored.sort(key=lambda g: -g[0])  # stable: the first closed of equal scores first
    best = scored[0]
    for candidate in scored[1:LIST_CANDIDATES]:
        if candidate[1] > best[1]:
            best = candidate
    return list(best[2])


# What the parser target asks of an element's name, as bits: its membership of the tag sets above (read once per name,
# _tag_flags) and the few names it tests one by one.
cdef enum:
    TAG_INLINE = 1
    TAG_SKIP = 2
    TAG_UNSEEN = 4
    TAG_UNJOINED = 8
    TAG_PREFORMATTED = 16
    TAG_EXCLUDED = 32  # EXCLUDED_TAGS
    TAG_BR = 64
    TAG_BODY = 128
    TAG_LINK = 256  # a
    TAG_META = 512
    TAG_SCRIPT = 1024
    TAG_TITLE = 2048
    TAG_MAIN = 4096
    TAG_MENU = 8192  # MENUS


# What the parse keeps of a title element's text: an unclosed one holds the rest of the page (the row's title is cut
# shorter once its white space is collapsed, BlockPage.title).
cdef enum:
    TITLE_TEXT_MAX = 10000


# libxml2's element names -> the name as str, its TAG_* bits and its place in COUNTED_TAGS (-1: none): an open
# addressing table of the names met so far (_TagTable, html.pxd), so an event costs no decoding and no set lookups. A
# name longer than TAG_KEY - 1 bytes, or met once TAG_CACHED names are held, is decoded and looked up at every event.
if len(COUNTED_TAGS) > MAX_COUNTED:
    raise ImportError("%d counted tags, the compiled parser counts at most %d" % (len(COUNTED_TAGS), MAX_COUNTED))


cdef int _tag_flags(str tag) except -1:
    """The TAG_* bits of the element name ``tag``."""
    return ((TAG_INLINE if tag in INLINE else 0) | (TAG_SKIP if tag in SKIP else 0)
            | (TAG_UNSEEN if tag in UNSEEN else 0) | (TAG_UNJOINED if tag in UNJOINED else 0)
            | (TAG_PREFORMATTED if tag in PREFORMATTED else 0)
            | (TAG_EXCLUDED if tag in EXCLUDED_TAGS else 0)
            | (TAG_BR if tag == "br" else 0) | (TAG_BODY if tag == "body" else 0)
            | (TAG_LINK if tag == "a" else 0) | (TAG_META if tag == "meta" else 0)
            | (TAG_SCRIPT if tag == "script" else 0) | (TAG_TITLE if tag == "title" else 0)
            | (TAG_MAIN if tag == "main" else 0) | (TAG_MENU if tag in MENUS else 0))


@cython.final
cdef class _TagTable:
    """The element names met so far with their TAG_* bits."""

    def __cinit__(self):
        cdef Py_ssize_t k
        memset(self.slots, 0, sizeof(self.slots))
        memset(&self.uncached, 0, sizeof(self.uncached))
        self.n_counted = len(COUNTED_TAGS)
        for k in range(self.n_counted):  # the str objects of COUNTED_TAGS hold the UTF-8 for the module's life
            self.counted_names[k] = <const char *> PyUnicode_AsUTF8(COUNTED_TAGS[k])

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(TAG_SLOTS):
            Py_XDECREF(self.slots[i].name)
        Py_XDECREF(self.uncached.name)

    cdef int _fill(self, _Tag *slot, const char *name, Py_ssize_t length) except -1:
        """``slot``'s name (a new reference, the old one released), bits and counted index for ``name``."""
        cdef str tag = PyUnicode_DecodeUTF8(name, length, NULL)
        cdef Py_ssize_t k
        Py_INCREF(tag)
        Py_XDECREF(slot.name)
        slot.name = <PyObject *> tag
        slot.flags = _tag_flags(tag)
        slot.counted = -1
        for k in range(self.n_counted):
            if strcmp(name, self.counted_names[k]) == 0:
                slot.counted = k
                break
        return 0

    cdef _Tag *entry(self, const char *name) except NULL:
        """The table's entry for the element name ``name``, made on first sight."""
        cdef Py_ssize_t length = strlen(name)
        cdef unsigned int h = 2166136261u
        cdef Py_ssize_t k, i
        cdef _Tag *slot
        if 0 < length < TAG_KEY:
            for k in range(length):  # FNV-1a
                h = (h ^ <unsigned char> name[k]) * 16777619u
            i = h & (TAG_SLOTS - 1)
            while True:
                slot = &self.slots[i]
                if slot.key[0] == 0:
                    break
                if strcmp(slot.key, name) == 0:
                    return slot
                i = (i + 1) & (TAG_SLOTS - 1)
            if self.held < TAG_CACHED:
                self._fill(slot, name, length)
                memcpy(slot.key, name, length + 1)
                self.held += 1
                return slot
        self._fill(&self.uncached, name, length)
        return &self.uncached


cdef class _Owner:
    """A block-level element on the parser's stack, collecting its runs of text, and its text lengths for the structure
    heuristics (Nodes): its own blocks' characters, and per child (block-level) the count, the sum and squares of their
    text lengths, the two longest and the article test's choice in the longest."""

    cdef tuple attrs(self):
        """The class/id tokens of the element and its ancestors, prefixed by level (computed once)."""
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


cdef tuple LEVEL_PREFIXES = ("0:", "1:", "2:", "3:")  # _Owner.attrs' prefixes, by level


cdef class _ClassId:
    """An element's class and id value: its tokens (class_id_tokens), whether they name comments (names_comments) and,
    made on first use, the tokens prefixed by each level as _Owner.attrs writes them ("2:menu")."""

    cdef tuple prefixed(self, Py_ssize_t level):
        cdef str prefix
        cdef tuple out = <tuple> self.by_level[level]
        if out is None:
            prefix = LEVEL_PREFIXES[level]
            out = self.by_level[level] = tuple([prefix + t for t in self.tokens])
        return out


cdef tuple _ascii_class_id_tokens(str class_id):
    """class_id_tokens of an ASCII value: its runs of letters of two or more, lower-cased."""
    cdef const char *data = <const char *> PyUnicode_DATA(class_id)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(class_id), i = 0, start
    cdef list tokens = []
    while i < n:
        if not is_ascii_letter(data[i]):
            i += 1
            continue
        start = i
        while i < n and is_ascii_letter(data[i]):
            i += 1
        if i - start > 1:
            tokens.append(PyUnicode_DecodeASCII(data + start, i - start, NULL).lower())
    return tuple(tokens)


cdef _Owner _owner(Py_ssize_t element, str tag, tuple ancestors, tuple levels, Py_ssize_t depth, Py_ssize_t parent,
                   bint excluded, bint preformatted, bint comment):
    """A new _Owner (without the Python call of a constructor)."""
    cdef _Owner owner = _Owner.__new__(_Owner)
    owner.element, owner.tag, owner.ancestors, owner.levels, owner.depth = element, tag, ancestors, levels, depth
    owner.parent, owner.excluded, owner.preformatted, owner.comment = parent, excluded, preformatted, comment
    owner.parts = []
    owner.link = 0
    owner.breaks = False
    owner.separator = 0
    owner.spaces = None
    owner.own_text = owner.children = owner.bearing = owner.longest = owner.second = 0
    owner.choice_first = owner.choice_last = -1
    owner.total = owner.squares = 0.0
    return owner


cdef inline bint _article_descends(Py_ssize_t count, double total, double squares, Py_ssize_t longest,
                                   Py_ssize_t second):
    """article_descends (floats: the sums may exceed an integer's range on a huge page)."""
    cdef double gap
    if count == 0 or longest <= 0:
        return False
    if count == 1:
        return True
    gap = <double> (longest - second)
    return gap * gap * count * (count - 1) >= count * squares - total * total


@cython.final
cdef class _Group:
    """One group of the list selection (depth, tag, class/id words): its occurrences, text length and the preorder
    ranges of its elements."""


@cython.final
cdef class BlockTarget:
    """libxml2's SAX events (parse_html) -> blocks, without building a tree.

    Text belongs to the nearest enclosing block-level element (anything but INLINE tags and ``br``, which breaks the
    block's text into lines); a block-level child ends the current run of its parent's text, and the text after the
    child starts a new run of the same parent. Subtrees of SKIP tags are ignored; only the ``body`` is read. Blocks
    inside a part excluded_part finds are marked ``excluded``. Its stack is three lists (tag, the owner the element
    opened or None, inside a link). One target reads page after page (parse_html resets it)."""

    def __init__(self):
        self.table = _TagTable()
        self.class_ids = {}
        self.nodes = False
        self.reset()

    def reset(self):
        """Start a new document."""
        self.blocks, self.owners, self.tags, self.opened, self.links = [], [], [], [], []
        self.element = -1
        self.skip = 0
        self.markup = Markup()
        self.in_json_ld = self.in_title = self.junction = False
        self.https_links = self.http_links = self.data_attributes = self.aria_attributes = 0
        memset(self.tag_counts, 0, sizeof(self.tag_counts))
        self.most_bearing = self.most_children_depth = self.leaf_text = self.leaf_parent_depth = self.deepest = 0
        self.leaf_parent = -1
        self.most_first = self.most_last = self.leaf_first = self.leaf_last = -1
        self.article_first = self.article_last = -1
        self.groups = {}

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
                if not owner.preformatted:
                    if _has_permalink(text):
                        lines = _without_permalink(lines or (text,))
                    if owner.link and _source_link(lines or (text,)):
                        lines = ("",)
                link = owner.link if owner.link < len(text) else len(text)
                self.blocks.append(Block(text, owner.element, owner.tag, owner.ancestors, owner.attrs(), link,
                                         owner.depth, owner.parent, owner.excluded, lines, owner.preformatted,
                                         owner.comment))
                owner.own_text += len(text)
            owner.parts = []
            owner.link = 0
            owner.breaks = False
            owner.spaces = None
        owner.separator = 0

    cdef _push(self, str tag, object owner, bint in_link):
        self.tags.append(tag)
        self.opened.append(owner)
        self.links.append(in_link)

    cdef _start(self, str tag, int flags, const xmlChar **atts):
        """An element ``tag`` (its TAG_* bits ``flags``) opens, with libxml2's attribute array ``atts`` (its class, id,
        role and aria-modal read only for a block-level element)."""
        cdef _Owner owner, child
        cdef bint in_link, junction = self.junction
        cdef tuple ancestors
        self.junction = False
        self.element += 1
        self.edit_section = self.seo_metadata = False
        self.in_json_ld = self._read_attributes(flags, atts)
        # the page's title: its first title element in the head or outside any skipped element (not an svg's)
        self.in_title = (flags & TAG_TITLE and self.markup.title is None
                         and (self.skip == 0 or self.skip == 1 and self.skip_head))
        if self.skip:
            if not (flags & TAG_MAIN and self.skip_menu):
                self.skip += 1
                return
            self.skip = 0  # a menu left open round the page (MENUS): its main element is read
        if flags & TAG_SKIP or self.edit_section or self.seo_metadata:
            self.skip = 1
            self.skip_head = tag == "head"
            self.skip_menu = flags & TAG_MENU
            if not flags & TAG_UNSEEN and not self.edit_section and self.owners:
                owner = self.owners[-1]
                if owner.parts and not owner.preformatted:
                    owner.separator = SKIPPED
            return
        in_link = bool(self.links) and self.links[-1]
        if not self.owners:
            if flags & TAG_BODY:
                owner = _owner(self.element, tag, (), (), 0, -1, False, False, False)
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
            class_id, role, modal = self._block_attributes(atts)
            child = _owner(self.element, owner.tag if tag in HEADING_PARTS and owner.tag in HEADINGS else tag,
                           (owner.tag,) + (ancestors if len(ancestors) < 4 else ancestors[:3]),
                           (class_id,) + owner.levels[:3], owner.depth + 1, owner.element,
                           owner.excluded or self._excluded(tag, flags, role, modal),
                           owner.preformatted or flags & TAG_PREFORMATTED,
                           owner.comment or (class_id is not None and (<_ClassId> class_id).comment))
            self.owners.append(child)
            self._push(tag, child, False)

    cdef bint _read_attributes(self, int flags, const xmlChar **atts) except -1:
        """What libxml2's attribute array ``atts`` (name, value, ..., NULL; a value may be NULL: ``''``) tells the
        page's Markup: the counts in C, the rare values (og:type, itemtype) as str; True when the element opens a
        JSON-LD script, whose text _data then adds to ``markup.json_ld``."""
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
            elif name[0] == b'c' and strcmp(name, "class") == 0 and value != NULL:
                self.edit_section = _edit_section(value)
            elif name[0] == b'i' and name[1] == b'd' and name[2] == 0 and value != NULL:
                self.seo_metadata = _seo_metadata(value)
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
        """The _ClassId of a class and id value (None: no tokens), from ``class_ids`` when there."""
        cdef object known = self.class_ids.get(class_id, False)
        cdef tuple tokens
        cdef _ClassId entry = None
        if known is not False:
            return known
        tokens = class_id_tokens(class_id)
        if tokens:
            entry = _ClassId.__new__(_ClassId)
            entry.tokens, entry.by_level = tokens, [None, None, None, None]
            entry.comment = names_comments(tokens)
        if len(self.class_ids) >= ATTR_CACHE_SIZE:
            self.class_ids.clear()
        self.class_ids[class_id] = entry
        return entry

    cdef tuple _block_attributes(self, const xmlChar **atts):
        """A block-level element's class and id (its _ClassId, or None: no tokens), role and aria-modal (None:
        absent) from libxml2's attribute array (name, value, ..., NULL; a later duplicate wins, no value is ``''``)."""
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
        # the class and the id joined by a space: the key of class_ids
        return (self._class_id(_joined_value(class_value, id_value)) if class_or_id else None, role, modal)

    cdef bint _excluded(self, str tag, int flags, object role, object modal) except -1:
        """excluded_part of a block-level element with this role and aria-modal (None: absent), asked only about an
        element of EXCLUDED_TAGS or one with a role or aria-modal attribute."""
        if role is None and modal is None and not flags & TAG_EXCLUDED:
            return False
        return excluded_part(tag, self.tags, role, modal)

    cdef _end(self, str tag, int flags):
        cdef list tags = self.tags
        cdef object opened
        cdef str name
        self.in_json_ld = self.in_title = False
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
                if self.nodes:
                    self._closed(<_Owner> opened)
            if name == tag:
                break
        self.junction = flags & TAG_INLINE and not flags & TAG_UNJOINED  # the next inline element may start a word

    cdef _data(self, str text):
        cdef _Owner owner
        cdef str title
        self.junction = False
        if self.in_json_ld:
            self.markup.json_ld[-1] += text
        elif self.in_title:
            title = self.markup.title or ""
            if len(title) < TITLE_TEXT_MAX:
                self.markup.title = title + text[:TITLE_TEXT_MAX - len(title)]
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

    cdef _closed(self, _Owner owner):
        """An element's end (after its last block): its place in the structure heuristics (Nodes), and its text length
        handed to its parent (the next owner on the stack)."""
        cdef Py_ssize_t last = self.element, text = owner.own_text + <Py_ssize_t> owner.total
        cdef Py_ssize_t first = owner.element, choice_first = owner.element, choice_last = last
        cdef _Owner parent = <_Owner> self.owners[-1] if self.owners else None
        cdef _Owner holder
        cdef _Group group
        cdef object level = owner.levels[0] if owner.levels else None
        cdef tuple key
        if owner.bearing > self.most_bearing:
            self.most_bearing, self.most_children_depth = owner.bearing, owner.depth
            self.most_first, self.most_last = first, last
        if owner.bearing == 0 and text > self.leaf_text:
            self.leaf_text = text
            holder = owner if parent is None else parent
            self.leaf_parent, self.leaf_parent_depth = holder.element, holder.depth
        if first == self.leaf_parent:
            self.leaf_first, self.leaf_last = first, last
        if _article_descends(owner.children, owner.total, owner.squares, owner.longest, owner.second):
            choice_first, choice_last = owner.choice_first, owner.choice_last
        if owner.depth > self.deepest:
            self.deepest = owner.depth
        key = (owner.depth, owner.tag, (<_ClassId> level).tokens if level is not None else ())
        group = self.groups.get(key)
        if group is None:
            group = _Group.__new__(_Group)
            group.count, group.length, group.ranges = 0, 0, []
            self.groups[key] = group
        group.count += 1
        group.length += text
        group.ranges.append((first, last))
        if parent is None:
            self.article_first, self.article_last = choice_first, choice_last
            return
        parent.children += 1
        parent.total += text
        parent.squares += (<double> text) * text
        if text > 0:
            parent.bearing += 1
        if text > parent.longest:
            parent.second, parent.longest = parent.longest, text
            parent.choice_first, parent.choice_last = choice_first, choice_last
        elif text > parent.second:
            parent.second = text

    cdef _nodes(self, nodes):
        """The candidates of the structure heuristics, into ``nodes`` (Nodes)."""
        cdef double middle
        cdef _Group group
        most, leaf = (self.most_first, self.most_last), (self.leaf_first, self.leaf_last)
        nodes.most_children, nodes.leaf_parent = most, leaf
        nodes.article = (self.article_first, self.article_last)
        if self.most_first != -1 and self.leaf_first != -1:
            middle = self.deepest / 2.0
            nodes.middle = most if (abs(self.most_children_depth - middle) <= abs(self.leaf_parent_depth - middle)) else leaf
        else:
            nodes.middle = most if self.most_first != -1 else leaf
        nodes.list_items = list_choice([(group.count, group.length, group.ranges)
                                             for group in self.groups.values()])

    def close(self):
        cdef _Owner owner
        while self.owners:
            owner = <_Owner> self.owners.pop()
            self._flush(owner)
            if self.nodes:
                self._closed(owner)
        markup = self.markup
        if self.nodes:
            self._nodes(markup.nodes)
        markup.elements = self.element + 1
        markup.https_links += self.https_links
        markup.http_links += self.http_links
        markup.data_attributes += self.data_attributes
        markup.aria_attributes += self.aria_attributes
        for k in range(self.table.n_counted):
            markup.tags[COUNTED_TAGS[k]] += self.tag_counts[k]
        return self.blocks

