mod differential;
mod shoot;
mod support;
