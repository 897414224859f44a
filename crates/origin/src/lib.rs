//! tank-origin: the origin simulator.
