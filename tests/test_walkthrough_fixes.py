"""Regressions found walking through the README as a new user and an operator."""

from __future__ import annotations

from digests.lookup import shown_venue, venue_label


def test_a_fetched_venue_that_names_its_year_is_not_shown_with_it_twice() -> None:
    # An arXiv comment "Accepted at ICML 2026" stores venue "ICML 2026" and year 2026
    # (no split, unlike a file's venue); it was shown as "ICML 2026 2026".
    assert shown_venue({"venue": "ICML 2026", "year": 2026}) == "ICML 2026"
    assert shown_venue({"venue": "ICLR 2025 Oral", "year": 2025}) == "ICLR 2025 Oral"
    assert venue_label({"venue": "ICLR 2025 Poster", "year": 2025}) == "ICLR 2025 Poster"
    # A venue without its year, or with another year, still gets the year.
    assert shown_venue({"venue": "ICLR", "year": 2025}) == "ICLR 2025"
    assert venue_label({"venue": "Workshop 2024", "year": 2025}) == "Workshop 2024 2025"
    assert venue_label({"venue": None, "year": None}) == "venue unknown"
