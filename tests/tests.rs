mod differential;
