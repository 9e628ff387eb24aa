namespace sluice::backend::test {
int crash_writer_main(int, char**) { return 2; }
}
