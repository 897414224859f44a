mod differential;
mod origin;
mod shoot;
mod support;
