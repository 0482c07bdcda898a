// The test harness: real processes on loopback, stopped by PID.
export * from './process.js';
