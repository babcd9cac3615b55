module berth.bench/nullextender

go 1.22
