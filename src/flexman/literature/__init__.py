"""What flexman recomputes from the literature, kept apart from the library itself.

* :mod:`.documents`: the key to the five source documents (000-004) and the other works cited;
* :mod:`.cases`: the literature validation cases of ``flexman validate`` and their pass rule;
* :mod:`.piedboeuf`: 001's static study of a one-link arm (sec. 4, Figs. 6-12);
* :mod:`.table2`: the arms of 004 Table 2 and their inertia-matrix operation counts;
* :mod:`.table_4_1`: 000 Table 4.1, inverse-dynamics operation counts of the thesis arm.

Nothing here is imported by the rest of the package; the CLI and the tests import it.
"""
