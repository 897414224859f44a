mod autostop;
mod counts;
mod differential;
mod origin;
mod report;
mod shoot;
mod support;
