"""Which sentences a KenLM training corpus keeps: the scorer's tokens, 3 to 200 of them, mostly words, in the
language (its stop words outnumber English ones; its own script for Chinese, Japanese and Korean), and no
licence or copyright notice (exactly the boilerplate the models must not learn)."""

from __future__ import annotations

import re

MIN_TOKENS = 3
MAX_TOKENS = 200

STOPWORDS = {
    "en": set("the and of to is in that it for with as are this be on by you can not or "
              "was have from which will if an at".split()),
    "de": set("der die das und ist nicht ein eine zu den von mit sich des auf für im dem "
              "wird werden es sie auch an als oder bei kann wenn sind wie sie ich zum zur "
              "einen einer diese dieser durch nach".split()),
    "fr": set("le la les des et est un une du en que qui dans pour pas sur au avec ce il "
              "sont ne se par vous peut cette aux elle ou être son sa ses".split()),
    "es": set("el la los las del y que en un una es por con para se no al lo como su "
              "más puede este esta si son está sus pero".split()),
    "it": set("il lo la gli le di del della dei che e è un una per non con si da al sono "
              "come più ma se questo anche nel alla questa essere ha".split()),
    "ru": set("и в не на что с по как это из к у от же для то он она мы вы они о но бы "
              "так все если или было быть его её их".split()),
    "pt": set("o a os as de do da dos das e que em um uma para com não por se no na nos "
              "nas ao é mais como mas foi ser são pode este esta".split()),
    "nl": set("de het een en van in is dat op te zijn met voor niet aan er die als ook "
              "door wordt worden bij kan om of uit naar dit deze".split()),
    "pl": set("i w na z do nie się że jest to jak o dla przez po od co ale czy lub być "
              "może są tym jego tak oraz".split()),
    "cs": set("a v se na je že s z do to o k i jak pro ale by jsou nebo být může jeho "
              "tak které který po".split()),
    "tr": set("ve bir bu da de için ile olarak olan daha çok gibi ama en ne her kadar "
              "sonra var değil veya ise".split()),
    "id": set("dan yang di ini itu dengan untuk dari dalam tidak akan pada ke adalah "
              "atau juga dapat oleh karena ada".split()),
    "vi": set("và của là có không được cho các một những trong với này để người khi đã "
              "từ như".split()),
    "sv": set("och i att det som en på är av för med till den har de inte om ett kan "
              "eller från vid så".split()),
    "hu": set("a az és hogy nem is egy van meg de ez csak mint el ki már azt vagy "
              "lehet kell volt".split()),
    "el": set("και το η ο να του της τα των σε με για από που είναι δεν θα στο στην "
              "τις οι".split()),
    "uk": set("і в на не що з до як це та у за від для але або його її є й ви ми "
              "вони якщо було бути".split()),
    "ro": set("și în de la cu pe nu este un o care să din pentru ca sau mai se au "
              "fi sunt dacă această acest".split()),
    "da": set("og i at det er en til på som de med for af den ikke har kan eller et "
              "fra vil skal der".split()),
    "fi": set("ja on ei se että oli ovat tai kun mutta myös joka kuin niin voi jos "
              "hän sen tämä ole".split()),
}

FIRST_LANGUAGES = ("en", "de", "fr", "es", "it")

# Languages written without spaces between words: a sentence counts as the language's
# when most of its letters are in the language's script (Japanese needs kana, which
# Chinese does not use); LM tokens are single characters there (pipeline.normalize).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u30ff"
SCRIPT = {
    "zh": (re.compile(f"[{_HAN}]"), None),
    "ja": (re.compile(f"[{_HAN}{_KANA}]"), re.compile(f"[{_KANA}]")),
    "ko": (re.compile("[\uac00-\ud7af]"), None),
}


# Licence and copyright notices are exactly the boilerplate the models must not learn.
LEGAL_RE = re.compile(
    r"copyright|©|all rights reserved|alle rechte vorbehalten|tous droits réservés"
    r"|derechos reservados|diritti riservati|все права защищены"
    r"|general public licen|free documentation licen"
    r"|free software foundation")


# The same notices in the languages added later (kept apart so that the first five
# languages' corpora, and so their binaries, stay byte-identical).
LEGAL_MORE_RE = re.compile(
    r"direitos reservados|rechten voorbehouden|prawa zastrzeżone|práva vyhrazena"
    r"|hakları saklıdır|hak cipta|bản quyền|minden jog fenntartva|med ensamrätt"
    r"|διατηρούνται|版权所有|版權所有|著作権|無断転載|저작권|licencj|licenc|lisans|lisensi"
    r"|giấy phép|licens|licentie|lizenz|licença|许可证|許可證|ライセンス|라이선스|άδεια")


def keep_sentence(tokens: list[str], lang: str) -> bool:
    """Does the training text of ``lang`` keep a sentence of these (normalised) tokens."""
    n = len(tokens)
    line = " ".join(tokens)
    if LEGAL_RE.search(line):
        return False
    if lang not in FIRST_LANGUAGES and (LEGAL_MORE_RE.search(line)
                                        or LEGAL_MORE_RE.search(line.replace(" ", ""))):
        return False
    if n < MIN_TOKENS or n > MAX_TOKENS:
        return False
    words = [t for t in tokens if t.isalpha()]
    if len(words) < 0.5 * n or len(words) < 2:
        return False
    if lang in SCRIPT:
        script, required = SCRIPT[lang]
        letters = "".join(words)
        own = len(script.findall(letters))
        if own < 0.6 * len(letters) or (required is not None and not required.search(letters)):
            return False
    elif lang != "en":
        own = sum(t in STOPWORDS[lang] for t in words)
        eng = sum(t in STOPWORDS["en"] and t not in STOPWORDS[lang] for t in words)
        if own == 0 or eng >= own:
            return False
    return True

