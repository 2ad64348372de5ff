/* Out-of-sample error at 0.5-2 MiB per machine (sim/oos.c), as test_sim_loo computes it:
 * PT_LOO_GUARD=1 build/test/test_sim_loo | sed -n 's/^oosfig //p' */
{"voipmonitor-turin", 10, 0.090, 0.153},
{"voipmonitor-wrx90", 1, 0.096, 0.096},
{"kalavai-docker", 6, 0.164, 0.287},
