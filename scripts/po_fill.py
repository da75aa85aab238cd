"""Fill the zh-Hans catalogue from a JSON file of {msgid: msgstr} (and merge catalogues).

    .venv/bin/python scripts/po_fill.py A.json [B.json …]   # fill empty msgstrs
    .venv/bin/python scripts/po_fill.py --from OTHER.po     # take translations from OTHER

Only empty entries are filled; a translation already in the catalogue is kept, except a
fuzzy one (msgmerge's guess), which is dropped. The header's fuzzy flag is cleared and
the Plural-Forms line set for Chinese (one form).
"""

import argparse
import json
from pathlib import Path

import polib

CATALOGUE = Path(__file__).resolve().parent.parent / "locale/zh_Hans/LC_MESSAGES/django.po"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("translations", nargs="*", help="JSON files of {msgid: msgstr}")
    parser.add_argument("--from", dest="other", help="another .po to take translations from")
    arguments = parser.parse_args()
    catalogue = polib.pofile(str(CATALOGUE))
    known: dict[str, str] = {}
    for path in arguments.translations:
        known.update(json.loads(Path(path).read_text(encoding="utf-8")))
    if arguments.other:
        for entry in polib.pofile(arguments.other):
            if entry.msgstr and "fuzzy" not in entry.flags:
                known.setdefault(entry.msgid, entry.msgstr)
            elif entry.msgstr_plural and entry.msgstr_plural.get(0):
                known.setdefault(entry.msgid, entry.msgstr_plural[0])
    filled = 0
    for entry in catalogue:
        if "fuzzy" in entry.flags:
            # msgmerge's guess from a similar msgid ("Utilisation" → the translation of
            # "Administration"): never kept, the entry counts as untranslated.
            entry.flags.remove("fuzzy")
            entry.msgstr = ""
            entry.msgstr_plural = {0: ""} if entry.msgid_plural else {}
            entry.previous_msgid = entry.previous_msgid_plural = None
        # A key "context\u0004msgid" (gettext's own separator) is for that context only.
        translation = (
            known.get(f"{entry.msgctxt}\x04{entry.msgid}") if entry.msgctxt else None
        ) or known.get(entry.msgid)
        if not translation:
            continue
        if entry.msgid_plural:
            if not entry.msgstr_plural.get(0):
                entry.msgstr_plural = {0: translation}
                filled += 1
        elif not entry.msgstr:
            entry.msgstr = translation
            filled += 1
    catalogue.metadata["Plural-Forms"] = "nplurals=1; plural=0;"
    catalogue.metadata["Language"] = "zh_Hans"
    catalogue.metadata["Content-Type"] = "text/plain; charset=UTF-8"
    if "fuzzy" in catalogue.metadata_is_fuzzy or catalogue.metadata_is_fuzzy:
        catalogue.metadata_is_fuzzy = []
    catalogue.save()
    missing = [entry.msgid for entry in catalogue if not entry.translated()]
    print(f"{filled} filled, {len(missing)} untranslated of {len(catalogue)}")


if __name__ == "__main__":
    main()
