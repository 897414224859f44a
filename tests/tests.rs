mod autostop;
mod differential;
mod origin;
mod report;
mod shoot;
mod support;
