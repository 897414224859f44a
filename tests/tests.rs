mod autostop;
mod differential;
mod hostile;
mod origin;
mod report;
mod shoot;
mod support;
