"""LM backends behind one interface (see :mod:`mitigate.lm.base`)."""
