# Net plugin: the TCP transport engine and one ABI shim per version, linked
# only into the plugin library (reachable as libnccl-net-pcie.so).
PLUGIN_SRCS += $(wildcard net/*.c)
# Suites with threads, also run under TSan by `make tsan`.
TSAN_TESTS += test_net test_net_fault test_net_ring test_net_teardown test_net_netns
