"""The value layer, below ``expr`` and ``state``: JSON state paths and JavaScript values.

``path`` names and reads places in a state, ``equality`` is JSON deep equality, ``values``
holds ECMA-262's abstract operations, ``strings`` their UTF-16 view of text and ``meter``
what a conversion may spend. It imports only the standard library and ``assay.errors``.
"""
