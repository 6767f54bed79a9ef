"""The mutant driver of refrt, as a small package.

    config     a tree's configuration (TOML): all the driver knows of it
    model      a mutant is a record (id, operator, edits, status, ...)
    catalog    the curated catalog (mutants/*.mut) and the ledger of
               equivalent mutants (mutants/equivalent)
    clex       a C tokenizer: the sites of generated mutants come from tokens,
               never from comments or strings
    operators  the generated mutants: operators applied to the sources
    tce        trivial compiler equivalence: equal optimised objects
    project    the tree snapshot, make, the unmutated run and its coverage
    runner     each mutant built and tested in its own copy, in parallel
    cache      results kept by content
    report     the closing line, results lines, JSON and HTML reports
    cli        the options; scripts/region_cache_mutants.py calls cli.main
"""
