mod autostop;
mod counts;
mod differential;
mod origin;
mod report;
mod run;
mod shoot;
mod support;
