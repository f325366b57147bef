"""The results pages' sections, one module per subject; ``benchmarks/results_page.py`` assembles them."""
