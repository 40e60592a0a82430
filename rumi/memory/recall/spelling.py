"""British spellings of a machine translation's English words, searched as American ones too.

Apertium's English generator writes British English ("¿Cuál es tu color favorito?" → "Which
is your favourite colour?"), while many English chats write American ("favorite color"). The
keyword index stems both with Porter, which keeps them apart ("favourit" / "favorit",
"colour" / "color", "travell" / "travel", "organis" / "organ"), so a Spanish question over
an American chat lost those words (docs/benchmarks.md, "Step 11 (Spanish)").

`alternatives` gives each British word of a translation its American spelling as a
*stand-in* (`QueryPlan.alternatives`): the keyword index searches the stand-in only when the
chat never wrote the British word, so a British chat ranks as before. The rules are closed
families of common words, not a general -our/-ise rewrite ("hour", "four", "exercise",
"surprise", "emphasis" stay as they are).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# colour, favourite, neighbourhood, honourable, behaviours ... → -or-
_OUR = re.compile(
    r"^(col|fav|hon|behavi|neighb|flav|hum|lab|harb|rum|sav|savi|vap|endeav|arm|parl|od|vig|"
    r"val|clam|splend|rig|tum|cand|ard|ferv)our(\w*)$")
# organise, organisation, realised, apologising ... → -iz-
_ISE = re.compile(
    r"^(organ|real|recogn|apolog|critic|emphas|memor|priorit|special|summar|sympath|util|"
    r"visual|final|social|custom|categor|character|minim|maxim|optim|mobil|energ|popular|"
    r"author|legal|standard|modern|personal|familiar|normal|theor|stabil|central|global|"
    r"capital|hospital|fantas|agon|jeopard|harmon|symbol|patron|civil|colon|mesmer|"
    r"steril|fertil|tranquil|vandal|item|scrutin|public|synchron|immun|"
    r"motor|computer|moistur|deodor|industrial|commercial)is(e|ed|es|ing|ation|ations|er|ers)$")
# analyse, paralysed → -yz-
_YSE = re.compile(r"^(anal|paral|catal)ys(e|ed|es|ing|er|ers)$")
# travelled, cancelling, counsellor, marvellous → one l
_LL = re.compile(
    r"^(travel|cancel|label|model|counsel|fuel|level|signal|quarrel|total|dial|channel|"
    r"tunnel|equal|snorkel|shovel|barrel|rival|panel|marvel|yodel|kennel|cruel|duel|"
    r"grovel|jewel|libel|pedal|refuel|remodel|squirrel|swivel|towel|tinsel|unravel)"
    r"l(ed|ing|er|ers|or|ors|ous)$")
# centre, theatres, centred → -er
_TRE = re.compile(r"^(cent|theat|met|lit|fib|calib|spect|somb|lust|sab|mit)re(s|d)?$")
_WORDS = {
    "grey": "gray", "greys": "grays", "programme": "program", "programmes": "programs",
    "jewellery": "jewelry", "pyjamas": "pajamas", "pyjama": "pajama", "doughnut": "donut",
    "doughnuts": "donuts", "learnt": "learned", "dreamt": "dreamed", "spelt": "spelled",
    "burnt": "burned", "spoilt": "spoiled", "smelt": "smelled", "leapt": "leaped",
    "defence": "defense", "offence": "offense", "licence": "license", "practise": "practice",
    "practised": "practiced", "practising": "practicing", "ageing": "aging",
    "cosy": "cozy", "cosier": "cozier", "sceptical": "skeptical", "sceptic": "skeptic",
    "moustache": "mustache", "aeroplane": "airplane", "aeroplanes": "airplanes",
    "aluminium": "aluminum", "catalogue": "catalog", "catalogues": "catalogs",
    "judgement": "judgment", "manoeuvre": "maneuver", "plough": "plow",
    "storey": "story", "storeys": "stories", "tyre": "tire", "tyres": "tires",
    "kerb": "curb", "mould": "mold", "mouldy": "moldy", "enrol": "enroll",
    "fulfil": "fulfill", "skilful": "skillful", "wilful": "willful",
    "paediatrician": "pediatrician", "encyclopaedia": "encyclopedia",
    "anaesthesia": "anesthesia", "oestrogen": "estrogen", "foetus": "fetus",
    # Apertium's word for "mamá"; American chats say "mom", British ones "mum"
    "mamma": "mom", "mammas": "moms",
}


def american(word: str) -> str | None:
    """The American spelling of a lower-case British `word`; None when it has no other."""
    if found := _WORDS.get(word):
        return found
    if m := _OUR.match(word):
        return f"{m[1]}or{m[2]}"
    if m := _ISE.match(word):
        return f"{m[1]}iz{m[2]}"
    if m := _YSE.match(word):
        return f"{m[1]}yz{m[2]}"
    if m := _LL.match(word):
        return f"{m[1]}{m[2]}"
    if m := _TRE.match(word):
        return f"{m[1]}er" + {"s": "s", "d": "ed"}.get(m[2] or "", "")
    return None


def alternatives(terms: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """term → (its American spelling,) for the terms written the British way, as the keyword
    index takes stand-ins: searched only where the chat never wrote the term."""
    out: dict[str, tuple[str, ...]] = {}
    for term in terms:
        found = american(term)
        if found and found != term:
            out[term] = (found,)
    return out
