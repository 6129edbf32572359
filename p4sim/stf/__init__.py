"""p4c STF tests on p4sim: the file parser (``parser``), the runner (``runner``), ``p4sim stf``."""
