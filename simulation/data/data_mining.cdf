# Data-mining flow sizes: the CDF of Greenberg et al., "VL2: A Scalable and Flexible Data Center
# Network", SIGCOMM 2009, Fig. 2 (flow sizes in a data-mining cluster), as used for the "data
# mining" workload of Alizadeh et al., "pFabric", SIGCOMM 2013, Fig. 4b. Points read from the
# figure; sizes in bytes (a packet = 1460 B). Heavy tailed: half the flows are one packet, the
# largest about 1 GB. Between points the simulator interpolates linearly. Mean about 7.4 MB.
# bytes cumulative_probability
0 0.0
1460 0.50
2920 0.60
4380 0.70
10220 0.80
389820 0.90
3076220 0.95
97333820 0.99
973333820 1.00
