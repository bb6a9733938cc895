"""Example applications: the outpost (``assay.examples.outpost``), hosted when no ``--app`` is
given."""
