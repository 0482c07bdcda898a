// @kubit/net: kubit-net, the node's pod network agent: the overlay between
// nodes (src/overlay/) and NetworkPolicy enforcement (src/netpol/).
export * from './netpol/index.js';
export * from './overlay/index.js';
