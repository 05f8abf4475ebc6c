"""Fixes: verified rewrites of risky numerics (``--fix``, ``--diff``, ``--unsafe-fixes``).

No TensorFlow here, and no rule codes.  A rewrite is matched on the analysed module
(:mod:`.match`, :mod:`.xent`, :mod:`.guards`) and built as IR (:mod:`.ir`) by a named rewrite
(:mod:`.rewrites`: the registry; :mod:`.logs`, :mod:`.domain`: the rewrites).  :mod:`.render`
writes the IR in the file's spelling, :mod:`.proof` proves it in the verification worker, and
:mod:`.apply` drives the passes and applies the proven fixes with :mod:`.splice`.
"""
