# Web-search flow sizes: the CDF of Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010,
# Fig. 4 (background flows of a production web-search cluster), as re-plotted for the
# "web search" workload of Alizadeh et al., "pFabric", SIGCOMM 2013, Fig. 4a. Points read from
# the figure; sizes in bytes (a packet = 1460 B of payload there). Between points the simulator
# interpolates linearly. Mean about 1.6 MB.
# bytes cumulative_probability
0 0.0
8760 0.15
18980 0.20
27740 0.30
48180 0.40
77380 0.53
194180 0.60
973820 0.70
1946180 0.80
4865820 0.90
9733820 0.97
29200000 1.00
