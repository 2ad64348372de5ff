/* Leave-one-machine-out figures (test_sim_loo.c, lomo_guard): regenerate with
 * PT_LOO_GUARD=1 build/test/test_sim_loo | sed -n 's/^guard //p' only when a change
 * improves them, and say so in docs/sim.md. */
{"rtxpro6000-4x8x-default-vs-LL128tuner-voipmonitor-turin.4x.box.cfg", "", 0.086, 0.109},
{"rtxpro6000-4x8x-default-vs-LL128tuner-voipmonitor-turin.4x.box.cfg", "plugin", 0.081, 0.204},
{"rtxpro6000-4x8x-default-vs-LL128tuner-voipmonitor-turin.8x.box.cfg", "", 0.153, 0.271},
{"rtxpro6000-4x8x-default-vs-LL128tuner-voipmonitor-turin.8x.box.cfg", "plugin", 0.122, 0.254},
{"rtxpro6000-8x-graphXML-vs-default-voipmonitor-turin.box.cfg", "", 0.147, 0.180},
{"rtxpro6000-8x-graphXML-vs-default-voipmonitor-turin.box.cfg", "graph XML", 0.127, 0.176},
{"rtxpro6000-8x-ring-rootcomplexA-vs-B-voipmonitor-wrx90.box.cfg", "", 0.108, 0.309},
{"rtx4090-2x-default-kalavai-docker.shm.cfg", "", 0.283, 0.390},
{"rtx4090-4x-default-kalavai-docker.shm.cfg", "", 0.085, 0.163},
