module metallb-ts.local/node-pause

go 1.22
