"""Enrichment of title-less abstracts: display titles, TL;DRs and links."""
