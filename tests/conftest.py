"""Shared pytest options (markers are registered in pyproject.toml)."""


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite tests/golden/ from the current parser output (then review the diff)",
    )
