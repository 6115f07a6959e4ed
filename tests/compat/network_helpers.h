/* Empty: the peers prog_tests include it; nothing of it is used. */
