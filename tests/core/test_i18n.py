"""The interface in English and in Simplified Chinese: the browser's language picks it,
the user menu (and the sign-in page) switch it, and the zh-Hans catalogue is complete and
compiled."""

from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.urls import reverse

CATALOGUE = Path(settings.BASE_DIR) / "locale/zh_Hans/LC_MESSAGES/django.po"
COMPILED = CATALOGUE.with_suffix(".mo")


@pytest.mark.django_db
def test_the_browser_language_picks_chinese(client, make_user):
    client.force_login(make_user("lead"))
    page = client.get(reverse("pools:pool_list"), headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    body = page.content.decode()
    assert '<html lang="zh-hans">' in body
    assert ">资源池<" in body and "退出登录" in body and "技术负责人" in body
    english = client.get(reverse("pools:pool_list"), headers={"Accept-Language": "en-GB"})
    assert '<html lang="en">' in english.content.decode()


@pytest.mark.django_db
def test_the_user_menu_switches_the_language_and_keeps_it(client, make_user):
    client.force_login(make_user("ops"))
    overview = reverse("dashboard:overview")
    menu = client.get(overview).content.decode()
    assert 'name="language" value="zh-hans"' in menu and "简体中文" in menu
    response = client.post(reverse("set_language"), {"language": "zh-hans", "next": overview})
    assert response.status_code == 302 and response.url == overview
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    # Without any Accept-Language, the cookie decides.
    assert "退出登录" in client.get(overview).content.decode()
    client.post(reverse("set_language"), {"language": "en", "next": overview})
    assert "Log out" in client.get(overview).content.decode()


@pytest.mark.django_db
def test_the_sign_in_page_offers_the_other_language_before_signing_in(client):
    login = client.get(reverse("login")).content.decode()
    assert 'id="login-language"' in login and 'value="zh-hans"' in login
    response = client.post(reverse("set_language"), {"language": "zh-hans", "next": "/login/"})
    assert response.status_code == 302
    assert "用户名" in client.get(reverse("login")).content.decode()


def test_the_setlang_view_refuses_a_get_and_a_foreign_next(client):
    assert client.get(reverse("set_language")).status_code in (302, 204, 405)
    response = client.post(
        reverse("set_language"), {"language": "zh-hans", "next": "https://evil.example/"}
    )
    assert response.status_code == 302 and not response.url.startswith("https://evil.example")


def test_the_catalogue_has_no_untranslated_or_fuzzy_entry():
    catalogue = polib.pofile(str(CATALOGUE))
    untranslated = [entry.msgid for entry in catalogue.untranslated_entries()]
    fuzzy = [entry.msgid for entry in catalogue.fuzzy_entries()]
    assert not untranslated, f"{len(untranslated)} untranslated, e.g. {untranslated[:5]}"
    assert not fuzzy, f"{len(fuzzy)} fuzzy, e.g. {fuzzy[:5]}"
    assert not catalogue.metadata_is_fuzzy


def test_the_compiled_catalogue_matches_its_source():
    """``manage.py compilemessages`` was run after the last edit of the .po file."""
    source = {
        entry.msgid: entry.msgstr or entry.msgstr_plural.get(0, "")
        for entry in polib.pofile(str(CATALOGUE))
        if not entry.obsolete
    }
    compiled = {
        entry.msgid: entry.msgstr or entry.msgstr_plural.get(0, "")
        for entry in polib.mofile(str(COMPILED))
        if entry.msgid
    }
    assert compiled == source


def test_placeholders_survive_translation():
    """A translation keeps every %(name)s of its msgid, or the page would raise."""
    import re

    pattern = re.compile(r"%\(\w+\)[sd]|\{\w*\}")
    for entry in polib.pofile(str(CATALOGUE)):
        translation = entry.msgstr or entry.msgstr_plural.get(0, "")
        assert sorted(pattern.findall(entry.msgid)) == sorted(pattern.findall(translation)), (
            entry.msgid
        )


def test_every_string_of_the_interface_is_in_the_catalogue(tmp_path, settings, monkeypatch):
    """What ``scripts/messages.sh`` would extract today (makemessages, with xgettext) is
    exactly what the catalogue holds: a string wrapped for translation and not yet in the
    catalogue, or one left behind after its text changed, fails here. The extraction runs
    on a copy of the code, so the committed catalogue is not touched."""
    import shutil

    from django.core.management import call_command

    for name in ("apps", "config", "templates"):
        shutil.copytree(
            Path(settings.BASE_DIR) / name,
            tmp_path / name,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
    (tmp_path / "locale").mkdir()
    monkeypatch.chdir(tmp_path)
    settings.LOCALE_PATHS = [str(tmp_path / "locale")]
    call_command("makemessages", locale=["zh_Hans"], no_location=True, verbosity=0)
    extracted = polib.pofile(str(tmp_path / "locale/zh_Hans/LC_MESSAGES/django.po"))
    catalogue = polib.pofile(str(CATALOGUE))
    wanted = {(entry.msgctxt, entry.msgid) for entry in extracted}
    held = {(entry.msgctxt, entry.msgid) for entry in catalogue if not entry.obsolete}
    assert not wanted - held, f"not in the catalogue: {sorted(wanted - held)[:10]}"
    assert not held - wanted, f"no longer in the code: {sorted(held - wanted)[:10]}"


def test_numbers_keep_their_thousands_separator_in_chinese():
    from datetime import date

    from django.contrib.humanize.templatetags.humanize import intcomma
    from django.utils import translation
    from django.utils.formats import date_format, number_format

    with translation.override("zh-hans"):
        assert intcomma(46702792704) == "46,702,792,704"
        assert number_format(5300.5, decimal_pos=1, force_grouping=True) == "5,300.5"
        assert date_format(date(2026, 12, 1)) == "2026-12-01"
