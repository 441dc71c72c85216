"""An arXiv Atom feed of papers, as the export API answers."""

from __future__ import annotations

ARXIV_FEED = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title type="html">ArXiv Query: search_query=all:dpo</title>
  <id>http://arxiv.org/api/cHxbiOdZaP56ODnBPIenZhzg5f8</id>
  <updated>2025-02-01T00:00:00-05:00</updated>
  <entry>
    <id>http://arxiv.org/abs/2502.01234v2</id>
    <updated>2025-02-03T18:00:00Z</updated>
    <published>2025-02-01T18:00:00Z</published>
    <title>AlphaDPO: Adaptive Reward Margin
      for Direct Preference Optimization</title>
    <summary>  We propose AlphaDPO, an adaptive
      preference optimization framework.
    </summary>
    <author><name>Ann Author</name></author>
    <author><name>Bo Writer</name></author>
    <link href="http://arxiv.org/abs/2502.01234v2" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/2502.01234v2" rel="related"
          type="application/pdf"/>
    <arxiv:primary_category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.AI" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
</feed>
"""
