"""Write tests/data/sample.warc.gz: the bundled sample WARC that `make run` processes.

The pages are written by this project (texts in tests/sample_texts.py): articles in
English, German, French, Spanish, Italian, Japanese and Russian, each wrapped in realistic
boilerplate (navigation, cookie banners, share buttons, related links, comments, login
boxes, pagination, footers) in four layouts: <article>, <main>, div soup and an old table
layout. Alongside them are the records the pipeline must skip and count: warcinfo, request
and metadata records, a JPEG response, a text/plain robots.txt, a 301 redirect, a revisit
record, a page with an empty body; and a page declared UTF-8 whose bytes are cp1252.

Like Common Crawl, every record is its own gzip member; some responses carry
WARC-Identified-Payload-Type, others do not. The output is deterministic: fixed dates,
record ids from uuid5, gzip mtime 0, so rerunning gives the same bytes.

    python tests/make_sample_warc.py [--out tests/data/sample.warc.gz]
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import html
import io
import uuid
from pathlib import Path

from warcio.warcwriter import WARCWriter

from sample_texts import ARTICLES

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "data" / "sample.warc.gz"
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/warcplex/sample")
START = dt.datetime(2024, 5, 20, 9, 0, 0, tzinfo=dt.timezone.utc)

# A 2x2 baseline JPEG (valid JFIF), for the image response that must be skipped.
TINY_JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeX"
    "BkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2P/wAARCAAC"
    "AAIDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhBy"
    "JxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKT"
    "lJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAA"
    "AAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRom"
    "JygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExc"
    "bHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwCSiiivGPWP/9k=")

# Boilerplate strings per language.
UI = {
    "en": dict(home="Home", news="News", topics="Topics", about="About us", contact="Contact",
               cookie="We use cookies to improve your experience and to show personalised adverts. "
                      "By continuing to browse you agree to our use of cookies.",
               accept="Accept all", settings="Cookie settings", share="Share on Facebook",
               tweet="Share on X", email="Email this page", related="You might also like",
               comments="Comments", reply="Reply", login="Log in", user="Username", password="Password",
               remember="Remember me", forgot="Forgot your password?", prev="Previous", next="Next",
               page="Page", rights="All rights reserved.", privacy="Privacy policy", terms="Terms of use",
               newsletter="Subscribe to our newsletter", subscribe="Subscribe", search="Search",
               posted="Posted on", by="by", read_more="Read more", advert="Advertisement"),
    "de": dict(home="Startseite", news="Aktuelles", topics="Themen", about="Über uns", contact="Kontakt",
               cookie="Wir verwenden Cookies, um Ihnen das beste Nutzererlebnis zu bieten. Wenn Sie "
                      "fortfahren, stimmen Sie der Verwendung von Cookies zu.",
               accept="Alle akzeptieren", settings="Einstellungen", share="Auf Facebook teilen",
               tweet="Auf X teilen", email="Per E-Mail senden", related="Das könnte Sie auch interessieren",
               comments="Kommentare", reply="Antworten", login="Anmelden", user="Benutzername",
               password="Passwort", remember="Angemeldet bleiben", forgot="Passwort vergessen?",
               prev="Zurück", next="Weiter", page="Seite", rights="Alle Rechte vorbehalten.",
               privacy="Datenschutz", terms="Impressum", newsletter="Newsletter abonnieren",
               subscribe="Abonnieren", search="Suche", posted="Veröffentlicht am", by="von",
               read_more="Weiterlesen", advert="Anzeige"),
    "fr": dict(home="Accueil", news="Actualités", topics="Rubriques", about="Qui sommes-nous", contact="Contact",
               cookie="Ce site utilise des cookies pour améliorer votre expérience et mesurer l'audience. "
                      "En poursuivant votre navigation, vous acceptez leur utilisation.",
               accept="Tout accepter", settings="Paramétrer", share="Partager sur Facebook",
               tweet="Partager sur X", email="Envoyer par e-mail", related="À lire aussi",
               comments="Commentaires", reply="Répondre", login="Se connecter", user="Identifiant",
               password="Mot de passe", remember="Se souvenir de moi", forgot="Mot de passe oublié ?",
               prev="Précédent", next="Suivant", page="Page", rights="Tous droits réservés.",
               privacy="Politique de confidentialité", terms="Mentions légales",
               newsletter="Inscrivez-vous à notre lettre d'information", subscribe="S'inscrire",
               search="Rechercher", posted="Publié le", by="par", read_more="Lire la suite", advert="Publicité"),
    "es": dict(home="Inicio", news="Noticias", topics="Secciones", about="Quiénes somos", contact="Contacto",
               cookie="Utilizamos cookies propias y de terceros para mejorar nuestros servicios. Si continúa "
                      "navegando, consideramos que acepta su uso.",
               accept="Aceptar todo", settings="Configurar", share="Compartir en Facebook",
               tweet="Compartir en X", email="Enviar por correo", related="Te puede interesar",
               comments="Comentarios", reply="Responder", login="Iniciar sesión", user="Usuario",
               password="Contraseña", remember="Recordarme", forgot="¿Olvidaste tu contraseña?",
               prev="Anterior", next="Siguiente", page="Página", rights="Todos los derechos reservados.",
               privacy="Política de privacidad", terms="Aviso legal", newsletter="Suscríbete a nuestro boletín",
               subscribe="Suscribirse", search="Buscar", posted="Publicado el", by="por",
               read_more="Leer más", advert="Publicidad"),
    "it": dict(home="Home", news="Notizie", topics="Categorie", about="Chi siamo", contact="Contatti",
               cookie="Questo sito utilizza cookie per migliorare la tua esperienza. Continuando la "
                      "navigazione accetti l'uso dei cookie.",
               accept="Accetta tutti", settings="Impostazioni", share="Condividi su Facebook",
               tweet="Condividi su X", email="Invia per email", related="Potrebbe interessarti anche",
               comments="Commenti", reply="Rispondi", login="Accedi", user="Nome utente", password="Password",
               remember="Ricordami", forgot="Password dimenticata?", prev="Precedente", next="Successivo",
               page="Pagina", rights="Tutti i diritti riservati.", privacy="Informativa privacy",
               terms="Termini di utilizzo", newsletter="Iscriviti alla newsletter", subscribe="Iscriviti",
               search="Cerca", posted="Pubblicato il", by="di", read_more="Continua a leggere",
               advert="Pubblicità"),
    "ja": dict(home="ホーム", news="お知らせ", topics="カテゴリー", about="運営者情報", contact="お問い合わせ",
               cookie="当サイトではサービス向上のためにクッキーを使用しています。サイトの利用を続けることで、"
                      "クッキーの使用に同意したものとみなされます。",
               accept="同意する", settings="設定", share="Facebookでシェア", tweet="Xでポスト",
               email="メールで送る", related="関連記事", comments="コメント", reply="返信", login="ログイン",
               user="ユーザー名", password="パスワード", remember="ログイン状態を保持", forgot="パスワードをお忘れですか？",
               prev="前へ", next="次へ", page="ページ", rights="無断転載を禁じます。", privacy="プライバシーポリシー",
               terms="利用規約", newsletter="メールマガジン登録", subscribe="登録する", search="検索",
               posted="投稿日", by="投稿者", read_more="続きを読む", advert="広告"),
    "ru": dict(home="Главная", news="Новости", topics="Рубрики", about="О нас", contact="Контакты",
               cookie="Мы используем файлы cookie, чтобы сайт работал лучше. Продолжая пользоваться сайтом, "
                      "вы соглашаетесь с этим.",
               accept="Принять", settings="Настройки", share="Поделиться в Facebook", tweet="Поделиться в X",
               email="Отправить по почте", related="Читайте также", comments="Комментарии", reply="Ответить",
               login="Войти", user="Логин", password="Пароль", remember="Запомнить меня",
               forgot="Забыли пароль?", prev="Назад", next="Далее", page="Страница",
               rights="Все права защищены.", privacy="Политика конфиденциальности", terms="Правила",
               newsletter="Подпишитесь на рассылку", subscribe="Подписаться", search="Поиск",
               posted="Опубликовано", by="автор", read_more="Читать далее", advert="Реклама"),
}

AUTHORS = ["Helen Marsh", "David Okafor", "Ruth Lindqvist", "Sam Patel", "Ines Moreau", "Jonas Becker",
           "Lucía Romero", "Kenji Sato", "Anna Volkova", "Marco Bellini"]


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def paragraphs(body: str) -> list[str]:
    return [" ".join(p.split()) for p in body.split("\n\n") if p.strip()]


def related_links(index: int, site: str, ui: dict) -> str:
    others = [a for a in ARTICLES if a[2] == site and a[0] != ARTICLES[index][0]][:3] or ARTICLES[index + 1:index + 3]
    items = "".join(f'<li><a href="/{a[0]}">{esc(a[4])}</a></li>' for a in others)
    return f'<h3>{esc(ui["related"])}</h3><ul class="related">{items}</ul>'


def comments_html(comments: tuple[str, ...], ui: dict, index: int) -> str:
    if not comments:
        return ""
    items = []
    for n, text in enumerate(comments):
        name = AUTHORS[(index + n + 3) % len(AUTHORS)].split()[0].lower() + str(17 + n * 12)
        items.append(f'<li class="comment"><div class="comment-meta"><b>{name}</b> · 2 {ui["reply"].lower()}'
                     f'</div><p>{esc(text)}</p><a href="#reply-{n}" class="reply">{esc(ui["reply"])}</a></li>')
    return (f'<section id="comments"><h3>{esc(ui["comments"])} ({len(comments)})</h3>'
            f'<ol class="comment-list">{"".join(items)}</ol></section>')


def login_box(ui: dict) -> str:
    return (f'<form class="login" action="/login" method="post"><h4>{esc(ui["login"])}</h4>'
            f'<label>{esc(ui["user"])} <input name="user"></label>'
            f'<label>{esc(ui["password"])} <input type="password" name="pw"></label>'
            f'<label><input type="checkbox"> {esc(ui["remember"])}</label>'
            f'<button>{esc(ui["login"])}</button> <a href="/reset">{esc(ui["forgot"])}</a></form>')


def share_bar(ui: dict, url: str) -> str:
    return (f'<div class="share"><a href="https://www.facebook.com/sharer.php?u={esc(url)}">{esc(ui["share"])}</a>'
            f' | <a href="https://x.com/intent/post?url={esc(url)}">{esc(ui["tweet"])}</a>'
            f' | <a href="mailto:?subject=link">{esc(ui["email"])}</a></div>')


def pagination(ui: dict, index: int) -> str:
    current = index % 5 + 2
    pages = " ".join(f'<a href="?page={p}">{p}</a>' if p != current else f"<span>{p}</span>" for p in range(1, 8))
    return (f'<nav class="pagination"><a href="?page={current - 1}">« {esc(ui["prev"])}</a> {pages} '
            f'<a href="?page={current + 1}">{esc(ui["next"])} »</a></nav>')


def nav(ui: dict) -> str:
    items = ["home", "news", "topics", "about", "contact"]
    links = "".join(f'<li><a href="/{k}">{esc(ui[k])}</a></li>' for k in items)
    return (f'<nav class="menu"><ul>{links}</ul><form action="/search"><input name="q" '
            f'placeholder="{esc(ui["search"])}"><button>{esc(ui["search"])}</button></form></nav>')


def cookie_banner(ui: dict) -> str:
    return (f'<div id="cookie-consent" class="banner"><p>{esc(ui["cookie"])}</p><button>{esc(ui["accept"])}'
            f'</button> <a href="/cookies">{esc(ui["settings"])}</a></div>')


def footer(ui: dict, site: str, year: int) -> str:
    return (f'<footer><p>© {year} {esc(site)}. {esc(ui["rights"])}</p><p><a href="/privacy">{esc(ui["privacy"])}'
            f'</a> · <a href="/terms">{esc(ui["terms"])}</a> · <a href="/contact">{esc(ui["contact"])}</a></p>'
            f'<div class="newsletter">{esc(ui["newsletter"])} <input type="email"> '
            f'<button>{esc(ui["subscribe"])}</button></div></footer>')


def head(title: str, site: str, lang: str, charset: str = "utf-8") -> str:
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="{charset}"><title>{esc(title)} | '
            f'{esc(site)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="stylesheet" href="/static/site.css"><script>window.dataLayer=window.dataLayer||[];'
            f'function gtag(){{dataLayer.push(arguments);}}gtag("js",new Date());</script></head>')


def render_page(index: int, article: tuple, charset: str = "utf-8") -> str:
    slug, lang, site, layout, title, body, comments = article
    ui = UI[lang]
    url = f"https://{site}/{slug}"
    author = AUTHORS[index % len(AUTHORS)]
    date = (START - dt.timedelta(days=3 * index + 1)).date().isoformat()
    paras = "".join(f"<p>{esc(p)}</p>\n" for p in paragraphs(body))
    byline = f'<p class="byline">{esc(ui["posted"])} {date} {esc(ui["by"])} {esc(author)}</p>'
    advert = f'<div class="ad"><small>{esc(ui["advert"])}</small><a href="https://ads.example/c?id={index}">' \
             f'<img src="https://ads.example/b{index}.gif" alt=""></a></div>'
    parts = [head(title, site, lang, charset), "<body>"]
    if layout == "article":
        parts += [f'<header><a class="logo" href="/">{esc(site)}</a>{nav(ui)}</header>', cookie_banner(ui),
                  f"<article><h1>{esc(title)}</h1>{byline}\n{paras}</article>", share_bar(ui, url),
                  f"<aside>{related_links(index, site, ui)}{advert}</aside>", comments_html(comments, ui, index),
                  footer(ui, site, 2024)]
    elif layout == "main":
        parts += [f'<header>{nav(ui)}</header>',
                  f'<main><h1>{esc(title)}</h1>{byline}{share_bar(ui, url)}\n{paras}'
                  f'{comments_html(comments, ui, index)}</main>',
                  f'<div class="sidebar">{login_box(ui)}{related_links(index, site, ui)}</div>',
                  pagination(ui, index), cookie_banner(ui), footer(ui, site, 2023)]
    elif layout == "divs":
        parts += [f'<div id="wrapper"><div class="top">{nav(ui)}</div>{cookie_banner(ui)}',
                  f'<div class="col-left">{related_links(index, site, ui)}{advert}</div>',
                  f'<div class="content"><div class="post-title"><h2>{esc(title)}</h2></div>{byline}'
                  f'<div class="entry">\n{paras}</div>{share_bar(ui, url)}{pagination(ui, index)}</div>',
                  f'<div class="col-right">{login_box(ui)}</div>{comments_html(comments, ui, index)}'
                  f'{footer(ui, site, 2022)}</div>']
    elif layout == "table":
        menu = "".join(f'<tr><td><a href="/{k}">{esc(ui[k])}</a></td></tr>'
                       for k in ("home", "news", "topics", "about", "contact"))
        parts += ['<table width="100%" border="0" cellpadding="4"><tr><td colspan="2" bgcolor="#336699">'
                  f'<font color="white" size="5">{esc(site)}</font></td></tr><tr>'
                  f'<td width="160" valign="top"><table>{menu}</table>{login_box(ui)}</td>'
                  f'<td valign="top"><h1>{esc(title)}</h1>{byline}\n{paras}{share_bar(ui, url)}'
                  f'{comments_html(comments, ui, index)}</td></tr>'
                  f'<tr><td colspan="2">{related_links(index, site, ui)}{footer(ui, site, 2009)}</td></tr></table>']
    else:
        raise ValueError(f"unknown layout {layout}")
    parts.append("</body></html>\n")
    return "\n".join(parts)


class SampleWriter:
    """Writes records with deterministic ids and dates, one gzip member each."""

    def __init__(self, stream: io.BufferedIOBase) -> None:
        self.writer = WARCWriter(stream, gzip=True, warc_version="1.1")
        self.n = 0

    def _headers(self, kind: str, url: str, extra: dict | None = None) -> dict:
        self.n += 1
        date = (START + dt.timedelta(seconds=37 * self.n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        record_id = f"<urn:uuid:{uuid.uuid5(NAMESPACE, f'{kind}:{url}:{self.n}')}>"
        return {"WARC-Record-ID": record_id, "WARC-Date": date, **(extra or {})}

    def write(self, kind: str, url: str, block: bytes, extra: dict | None = None,
              content_type: str = "") -> dict:
        headers = self._headers(kind, url, extra)
        record = self.writer.create_warc_record(url, kind, payload=io.BytesIO(block), length=len(block),
                                                warc_content_type=content_type, warc_headers_dict=headers)
        self.writer.write_record(record)
        return headers

    def warcinfo(self, filename: str, fields: dict[str, str]) -> None:
        block = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("utf-8")
        headers = self._headers("warcinfo", filename, {"WARC-Filename": filename})
        record = self.writer.create_warc_record("", "warcinfo", payload=io.BytesIO(block), length=len(block),
                                                warc_content_type="application/warc-fields",
                                                warc_headers_dict=headers)
        self.writer.write_record(record)

    def exchange(self, url: str, status: str, content_type: str | None, body: bytes, *,
                 identified: str | None = None, extra_headers: tuple[tuple[str, str], ...] = (),
                 metadata: bool = False) -> None:
        """A request, its response and optionally a metadata record, as Common Crawl writes them."""
        host = url.split("/")[2]
        path = "/" + url.split("/", 3)[3] if url.count("/") >= 3 else "/"
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: warcplex-sample/1.0\r\n"
                   f"Accept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.8\r\n\r\n").encode("ascii")
        req = self.write("request", url, request, content_type="application/http; msgtype=request")
        lines = [f"HTTP/1.1 {status}", "Date: Mon, 20 May 2024 09:00:00 GMT", "Server: nginx"]
        if content_type:
            lines.append(f"Content-Type: {content_type}")
        lines += [f"{k}: {v}" for k, v in extra_headers]
        lines.append(f"Content-Length: {len(body)}")
        block = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        extra = {"WARC-Concurrent-To": req["WARC-Record-ID"]}
        if identified:
            extra["WARC-Identified-Payload-Type"] = identified
        resp = self.write("response", url, block, extra, content_type="application/http; msgtype=response")
        if metadata:
            fetch = f"fetchTimeMs: {120 + self.n}\r\ncharset-detected: UTF-8\r\n".encode("ascii")
            self.write("metadata", url, fetch, {"WARC-Concurrent-To": resp["WARC-Record-ID"]},
                       content_type="application/warc-fields")


CP1252_PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Caf\u00e9 notes \u2013 Elm Street</title></head>
<body><nav><a href="/">Home</a> | <a href="/menu">Menu</a> | <a href="/visit">Visit</a></nav>
<article><h1>The caf\u00e9 on Elm Street turns ten</h1>
<p>When Ren\u00e9e Dubois opened her caf\u00e9 on Elm Street ten years ago, her friends told her it was \u201ca lovely idea for about six months\u201d. A decade later the little room with eight tables is one of the busiest places in the neighbourhood.</p>
<p>The recipe for success, she says, is simple: good coffee, soup that changes every day and a cr\u00e8me br\u00fbl\u00e9e that regulars order before they even sit down. Prices have barely changed \u2013 a bowl of soup still costs \u00a34.50.</p>
<p>To celebrate the anniversary the caf\u00e9 will stay open late on Friday, with live music from a local trio and a free slice of cake for everyone who brings an old loyalty card.</p>
</article><footer>\u00a9 2024 Elm Street Caf\u00e9. All rights reserved.</footer></body></html>
"""


def build(out: Path) -> dict[str, int]:
    """Write the sample WARC to ``out``; return the number of records of each kind."""
    out.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    w = write_sample(buffer, out.name)
    out.write_bytes(buffer.getvalue())
    return {"records": w.n, "articles": len(ARTICLES)}


def write_sample(buffer: io.BytesIO, name: str) -> SampleWriter:
    """The sample's records (:func:`build`) into ``buffer``; the writer, which counted them."""
    w = SampleWriter(buffer)
    w.warcinfo(name, {"software": "warcplex scripts/make_sample_warc.py", "format": "WARC File Format 1.1",
                          "description": "Sample pages written by the warcplex project for tests and `make run`",
                          "isPartOf": "warcplex-sample", "operator": "warcplex"})
    for index, article in enumerate(ARTICLES):
        body = render_page(index, article).encode("utf-8")
        url = f"https://{article[2]}/{article[0]}"
        # Half the responses carry WARC-Identified-Payload-Type like Common Crawl's, half do not.
        w.exchange(url, "200 OK", "text/html; charset=UTF-8" if index % 3 else "text/html", body,
                   identified="text/html" if index % 2 == 0 else None, metadata=index % 4 == 0)
    # A page whose server sends a generic Content-Type: only WARC-Identified-Payload-Type says HTML.
    w.exchange("https://ashford-gazette.example/download?id=cafe-notes", "200 OK", "application/octet-stream",
               CP1252_PAGE.replace("Elm Street turns ten", "Elm Street: the menu").encode("utf-8"),
               identified="text/html")
    # Declared UTF-8 (HTTP header and meta), but the bytes are cp1252.
    w.exchange("https://elmstreet-cafe.example/news/ten-years", "200 OK", "text/html; charset=utf-8",
               CP1252_PAGE.encode("cp1252"), metadata=True)
    # Records that must be skipped and counted.
    w.exchange("https://ashford-gazette.example/robots.txt", "200 OK", "text/plain",
               b"User-agent: *\nDisallow: /login\nDisallow: /search\nSitemap: https://ashford-gazette.example/sitemap.xml\n",
               identified="text/plain")
    w.exchange("https://ashford-gazette.example/images/bridge.jpg", "200 OK", "image/jpeg", TINY_JPEG,
               identified="image/jpeg")
    w.exchange("http://homekitchen.example/red-lentil-soup", "301 Moved Permanently", "text/html",
               b'<html><body>Moved to <a href="https://homekitchen.example/red-lentil-soup">here</a>.</body></html>',
               extra_headers=(("Location", "https://homekitchen.example/red-lentil-soup"),))
    w.exchange("https://riverside-news.example/empty", "200 OK", "text/html; charset=utf-8", b"")
    first_url = f"https://{ARTICLES[0][2]}/{ARTICLES[0][0]}"
    revisit = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nServer: nginx\r\n\r\n"
    w.write("revisit", first_url, revisit, {
        "WARC-Profile": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
        "WARC-Refers-To-Target-URI": first_url, "WARC-Refers-To-Date": "2024-05-20T09:01:14Z",
        "WARC-Payload-Digest": "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        content_type="application/http; msgtype=response")
    return w


# The stages sample (`make run`): the sample above, then real pages copied byte for byte from the genuine WARCs
# beside it (tests/data/README.md gives their origin and licence), then a syndicated copy of one article.
REAL_PAGES = (
    # Creative Commons' own pages (CC BY 4.0): an article type the page-type model knows, and real boilerplate.
    ("other-real/dolma-tests_data_warc_sample-0001.warc.gz", "https://creativecommons.org/mission/"),
    ("other-real/dolma-tests_data_warc_sample-0001.warc.gz",
     "https://creativecommons.org/2024/04/23/cc-at-wipo-slow-progress-on-copyright-exceptions-for-cultural-heritage-"
     "institutions/"),
    # Common Crawl's site: a listing, a collection, a blog post, an FAQ; lines the perplexity rule drops.
    ("other-real/dolma-tests_data_warc_sample-0001.warc.gz", "https://commoncrawl.org/"),
    ("other-real/dolma-tests_data_warc_sample-0001.warc.gz", "https://commoncrawl.org/ccbot"),
    ("other-real/dolma-tests_data_warc_sample-0001.warc.gz", "https://commoncrawl.org/blog/march-april-2024-newsletter"),
    ("other-real/dolma-tests_data_warc_sample-0001.warc.gz", "https://commoncrawl.org/faq"),
    # The same home page fetched twice by the crawler: different bytes, the same text (the exact duplicate).
    ("other-real/dolma-tests_data_warc_sample-0001.warc.gz", "https://allenai.org/"),
    ("other-real/dolma-tests_data_warc_sample-0001.warc.gz", "https://allenai.org/"),
    # A German cycling-statistics page from Common Crawl: the block stage finds no main text, resiliparse does (a
    # fallback).
    ("cc-genuine/CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz",
     "http://06.live-radsport.ch/fahrerstatistik_801/Anthony_Ravard.html"),
    # An Aragonese Wikipedia page from Common Crawl (CC BY-SA 4.0): a language without a KenLM model.
    ("cc-genuine/CC-MAIN-2024-22.whirlwind.warc.gz", "https://an.wikipedia.org/wiki/Escopete"),
)
STAGES_OUT = ROOT / "tests" / "data" / "stages.warc.gz"
SYNDICATED = 3  # ARTICLES[3] (the library's reopening) is syndicated: the near duplicate


def copy_records(source: Path, uri: str, occurrence: int) -> bytes:
    """The gzip members of the ``occurrence``-th (0-based) fetch of ``uri`` in ``source`` (its request, response
    and metadata records), byte for byte."""
    from warcio.archiveiterator import ArchiveIterator

    data = source.read_bytes()
    found, members = -1, []
    with open(source, "rb") as stream:
        records = ArchiveIterator(stream)
        for record in records:
            record.content_stream().read()
            same = record.rec_headers.get_header("WARC-Target-URI") == uri
            if same and record.rec_type == "request":
                found += 1
            if same and found == occurrence and record.rec_type in ("request", "response", "metadata"):
                members.append(data[records.offset:records.offset + records.get_record_length()])
    if not members:
        raise ValueError(f"{source}: no record of {uri} (fetch {occurrence})")
    return b"".join(members)


def syndicated_page(index: int) -> str:
    """ARTICLES[index] as another site republishes it: its own headline, layout and boilerplate, and one sentence
    of the last paragraph changed (a near duplicate, not an exact one)."""
    slug, lang, _, _, title, body, _ = ARTICLES[index]
    paras = paragraphs(body)
    paras[-1] = paras[-1].replace("from next month", "from the first of March")
    article = (f"{slug}-syndicated", lang, "riverside-news.example", "main", f"Ashford: {title.lower()}",
               "\n\n".join(paras), ())
    return render_page(index, article)


def build_stages(out: Path) -> dict[str, int]:
    """Write the stages sample to ``out``: :func:`write_sample`'s records, :data:`REAL_PAGES`, and the near
    duplicate; return the number of records and pages."""
    buffer = io.BytesIO()
    w = write_sample(buffer, out.name)
    w.exchange(f"https://riverside-news.example/{ARTICLES[SYNDICATED][0]}-syndicated", "200 OK",
               "text/html; charset=UTF-8", syndicated_page(SYNDICATED).encode("utf-8"), identified="text/html")
    seen: dict[str, int] = {}
    for relative, uri in REAL_PAGES:
        buffer.write(copy_records(ROOT / "tests" / "data" / relative, uri, seen.get(uri, 0)))
        seen[uri] = seen.get(uri, 0) + 1
    out.write_bytes(buffer.getvalue())
    return {"records": w.n, "articles": len(ARTICLES) + 1 + len(REAL_PAGES)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", action="store_true",
                        help=f"write the stages sample `make run` reads (default --out {STAGES_OUT.relative_to(ROOT)})")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or (STAGES_OUT if args.stages else DEFAULT_OUT)
    counts = (build_stages if args.stages else build)(out)
    print(f"wrote {out}: {counts['records']} written records, {counts['articles']} article pages, "
          f"{out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
