"""The docs keep up with the code: every environment variable gpufleet reads is on the
Configuration page, and the README's links lead to files that exist.

``make test`` builds the site with ``mkdocs build --strict`` (links between pages, the
nav); these checks cover what mkdocs cannot see: the settings' variables and the
README, which lives outside ``docs/``.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGURATION = ROOT / "docs" / "configuration.md"

# env.str("NAME", …), env.bool("NAME", …), env("NAME"), os.environ.get("NAME"), and the
# compose file's ${NAME:-…}.
READS = (
    re.compile(r"\benv(?:\.\w+)?\(\s*\"([A-Z][A-Z0-9_]+)\""),
    re.compile(r"os\.environ(?:\.get\(|\[)\s*\"([A-Z][A-Z0-9_]+)\""),
    re.compile(r"\$\{([A-Z][A-Z0-9_]+)[:}]"),
)


def variables_read() -> set[str]:
    sources = [*sorted((ROOT / "config").glob("*.py")), ROOT / "docker-compose.yml"]
    names = set()
    for source in sources:
        text = source.read_text()
        for pattern in READS:
            names.update(pattern.findall(text))
    return names


def test_every_environment_variable_is_documented():
    names = variables_read()
    # The patterns find what the settings read; a handful proves they still match.
    assert {"DATABASE_URL", "METRICS_TOKEN", "OIDC_ISSUER", "WEB_WORKERS"} <= names
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", CONFIGURATION.read_text()))
    missing = sorted(names - documented)
    assert not missing, f"not on docs/configuration.md: {', '.join(missing)}"


def test_readme_is_one_screen_of_links_that_resolve():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [target for target in targets if "://" not in target]
    assert "docs/img/overview.png" in local
    broken = [target for target in local if not (ROOT / target).exists()]
    assert not broken, f"README links to missing files: {broken}"


# `apps/pools/memory.py`, `apps/catalog/data/`, `tests/factories.py`, `bench/dashboard.py`:
# a path in backticks that names a file or folder of the repository.
CITED_PATH = re.compile(r"`((?:apps|config|tests|bench|scripts|deploy)/[\w./-]*\w/?)`")


def test_code_paths_the_docs_cite_exist():
    """Modules move; a page that sends a reader to a file that is gone misleads them."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    missing = sorted(
        f"{page.relative_to(ROOT)}: {path}"
        for page in pages
        for path in set(CITED_PATH.findall(page.read_text()))
        if not (ROOT / path.split("::")[0]).exists()
    )
    assert not missing, "the docs cite paths that do not exist:\n" + "\n".join(missing)
