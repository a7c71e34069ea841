module github.com/hccl-go/hccl-go

go 1.26.8

require (
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
)
